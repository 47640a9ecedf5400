// The metadata files of a LeRobot v2.1 dataset (meta/info.json, meta/episodes.jsonl,
// meta/tasks.jsonl), generated from a v3.0 dataset's metadata byte for byte as LeRobot v2.1's own
// code writes them (core/lerobot/lerobot_v21_format.md says what that is and where it comes from).
// Pure functions over text and sources the caller owns; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/lerobot/lerobot_meta.h"

namespace packfs {

// The v2.1 path templates (info.json's data_path and video_path).
inline constexpr std::string_view kLeRobotV21DataPath =
    "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet";
inline constexpr std::string_view kLeRobotV21VideoPath =
    "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4";
// Episodes per chunk directory in v2.1 (DEFAULT_CHUNK_SIZE). v3's chunks_size counts files, so
// it is not carried over.
inline constexpr uint64_t kLeRobotV21ChunksSize = 1000;

// The counts info.json states, taken from the tables the v2.1 view shows (not from v3's
// info.json, which may disagree with them): total_videos and total_chunks follow from these.
struct V21Totals {
  uint64_t total_episodes = 0;  // lines of episodes.jsonl
  uint64_t total_frames = 0;    // sum of the episodes' lengths
  uint64_t total_tasks = 0;     // lines of tasks.jsonl
};
V21Totals LeRobotV21TotalsOf(const std::vector<Episode>& episodes, uint64_t total_tasks);

// meta/info.json of the v2.1 view, as json.dump(info, f, indent=4, ensure_ascii=False) writes
// it (no final newline). Keys in v2.1's order: codebase_version ("v2.1"), robot_type (null when
// absent), total_episodes, total_frames, total_tasks (from `totals`), total_videos (episodes
// times video features), total_chunks (episodes / 1000 rounded up), chunks_size (1000), fps
// (an integral float becomes an int), splits (carried; {"train": "0:<episodes>"} when absent),
// data_path and video_path (the v2.1 templates; video_path null when v3's is null or there are
// no video features), features (carried in order, without the "fps" key the v2.1->v3 converter
// adds to non-video features). Every other v3 key (data_files_size_in_mb, tools, ...) is dropped.
// Errors name `path_for_messages`: Corruption for text that is not a JSON object,
// InvalidArgument for a codebase_version other than v3.x, a missing or non-positive fps, or
// features that are not an object of objects with a string dtype.
Result<std::string> LeRobotV21InfoJson(std::string_view v3_info_json, const V21Totals& totals,
                                       const std::string& path_for_messages);

// meta/episodes.jsonl: one line per episode in the given order,
// {"episode_index": 0, "tasks": ["..."], "length": 373}, each ending in "\n".
std::string LeRobotV21EpisodesJsonl(const std::vector<Episode>& episodes);

struct LeRobotTask {
  uint64_t index = 0;
  std::string task;
};

// Reads a v3 meta/tasks.parquet (pandas' to_parquet of a frame indexed by task string): the
// strings are the column "task" (files re-saved by current LeRobot), else "__index_level_0__"
// (v0.4.x), else the one column other than task_index; task_index is int64. Returns the tasks
// sorted by index. Missing columns, nulls, negative or repeated task_index values are errors
// naming the file.
Result<std::vector<LeRobotTask>> ReadLeRobotTasks(const ShardSource& tasks_parquet);

// meta/tasks.jsonl: {"task_index": 0, "task": "..."} lines, each ending in "\n", in the given
// order (sorted by task_index when read from tasks.parquet, which fails as ReadLeRobotTasks does).
std::string LeRobotV21TasksJsonl(const std::vector<LeRobotTask>& tasks);
Result<std::string> LeRobotV21TasksJsonl(const ShardSource& tasks_parquet);

}  // namespace packfs
