// The metadata and data files of the LeRobot v2.1 layout of a v3 dataset (meta/info.json,
// meta/episodes.jsonl, meta/tasks.jsonl, meta/episodes_stats.jsonl; the plan of
// data/chunk-XXX/episode_XXXXXX.parquet), generated from the dataset's
// v3 metadata with the core/lerobot_v21 generators, for the mount's view and for
// `mkpack convert-lerobot`. Reads through `dataset` only during the call; thread-compatible.
#pragma once

#include "core/base/status.h"
#include "core/lerobot/lerobot_view.h"
#include "core/read/pack_set.h"

namespace packfs {

// Where the v3 files go in the v2.1 layout.
inline constexpr const char* kLeRobotV3Prefix = "v3/";

// Turns `plan` (from PlanLeRobotView of `dataset`) into a v2.1 layout plan: layout kV21 and
// v21_meta holding, in this order, meta/info.json (LeRobotV21InfoJson of the dataset's
// meta/info.json, totals from the episodes tables and meta/tasks.parquet; its mtime),
// meta/episodes.jsonl (LeRobotV21EpisodesJsonl; the episodes tables' newest mtime),
// meta/tasks.jsonl (tasks.parquet's mtime) and meta/episodes_stats.jsonl (the episodes tables'
// mtime). episodes_stats.jsonl is left out, with a note in v21_notes saying why, when the tables'
// stats cannot be converted (e.g. camera stats, not supported yet): a v2.1 loader refuses the
// dataset without it, but the files are still useful. A missing or bad meta/info.json or
// meta/tasks.parquet is an error naming the file (the caller may fall back to the v3 layout).
// v21_data (and v21_data_schema) plan data/chunk-XXX/episode_XXXXXX.parquet for every episode
// from the v3 data files' footers and the tables' dataset_from_index/dataset_to_index (their
// mtime: the source data file's); a data file is built here only when its size depends on the
// data (string features). When they cannot be made (image or 2-D features, episodes not numbered
// 0..N-1, rows that disagree with the lengths, unreadable data files) v21_data stays empty and
// v21_notes says why.
Status AddLeRobotV21Files(const PackSet& dataset, LeRobotPlan* plan);

}  // namespace packfs
