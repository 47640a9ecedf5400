// meta/episodes_stats.jsonl of a LeRobot v2.1 view, generated from the per-episode statistics
// columns (stats/<feature>/<stat>) of a v3.0 dataset's meta/episodes tables, as LeRobot v2.1's
// write_episode_stats writes them (core/lerobot/lerobot_v21_format.md §4). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"

namespace packfs {

// One line per episode, sorted by episode_index, each ending in "\n":
// {"episode_index": 0, "stats": {"<feature>": {"min": [...], "max": [...], "mean": [...],
// "std": [...], "count": [n]}, ...}}
// Features in v3 info.json's order, except dtype "string" (v2.1 keeps no stats for them); v3's
// quantiles (q01 ... q99) are dropped. Numbers keep the type the table stores (integer lists
// print as ints, floating-point ones with Python's float repr; integers of a "bool" feature as
// true/false), so min/max of int64 features are ints and their mean/std floats, as in v2.1.
//
// Image and video features keep their stats nested as v3 stores them: min/max/mean/std as lists
// nested three deep (shape (3,1,1), one value per channel, e.g. [[[0.0]], [[0.1]], [[0.2]]]),
// count as [n]. Errors: a missing column, a null, or an episode_index in two rows
// (NotFound/Corruption/NotSupported naming the table), and info.json errors naming
// `info_path_for_messages`.
Result<std::string> LeRobotV21EpisodesStatsJsonl(
    const std::vector<const ShardSource*>& episodes_tables, std::string_view v3_info_json,
    const std::string& info_path_for_messages);

}  // namespace packfs
