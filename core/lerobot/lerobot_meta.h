// LeRobot dataset metadata: meta/info.json, the v3.0 episodes tables (meta/episodes/chunk-XXX/
// file-YYY.parquet: where each episode's frames sit inside the shared per-camera MP4s), and the path
// templates and v2.1-style names packfs uses to show one MP4 per episode.
// Pure functions over bytes and sources the caller owns; thread-compatible values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"

namespace packfs {

struct LeRobotInfo {
  std::string codebase_version;  // "v3.0", "v2.1", ...
  double fps = 0;
  uint64_t chunks_size = 0;
  uint64_t total_episodes = 0;
  std::string data_path;               // template, e.g. "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
  std::string video_path;              // template; empty when the dataset has no videos
  std::vector<std::string> video_keys;  // features with dtype "video", sorted
};

// Parses meta/info.json. Missing or mistyped required fields (codebase_version, fps > 0,
// chunks_size > 0, total_episodes, data_path, features) and templates with unknown fields are
// InvalidArgument/Corruption errors naming `path_for_messages`.
Result<LeRobotInfo> ParseLeRobotInfo(std::string_view json_text,
                                     const std::string& path_for_messages);

// True for codebase_version "v3" or "v3.x".
bool IsLeRobotV3(const LeRobotInfo& info);

struct EpisodeVideo {
  std::string video_key;
  uint64_t chunk_index = 0, file_index = 0;
  double from_timestamp = 0, to_timestamp = 0;  // seconds inside the shared MP4
};

struct Episode {
  uint64_t index = 0;
  uint64_t length = 0;  // frames
  std::vector<std::string> tasks;
  std::vector<EpisodeVideo> videos;  // one per info.video_keys entry, in that order
};

// Reads every meta/episodes parquet file given (in order) and returns the episodes sorted by
// index. Missing required columns (episode_index, length, tasks, videos/<key>/{chunk_index,
// file_index, from_timestamp, to_timestamp}), nulls or negative values in them, to < from, and
// duplicate episode indexes are errors naming the file. The sources must outlive the call only.
Result<std::vector<Episode>> ReadLeRobotEpisodes(const std::vector<const ShardSource*>& files,
                                                 const LeRobotInfo& info);

// Formats a LeRobot path template: "{name}" and "{name:0Nd}" / "{name:Nd}" fields, "{{" and "}}"
// for literal braces. An unknown field, a bad spec or a numeric spec on a string is an
// InvalidArgument naming the template.
using TemplateValue = std::variant<uint64_t, std::string>;
Result<std::string> FormatLeRobotTemplate(std::string_view tmpl,
                                          const std::map<std::string, TemplateValue>& fields);

// info.video_path formatted for one episode video, e.g.
// "videos/observation.images.front/chunk-000/file-000.mp4".
Result<std::string> LeRobotVideoPath(const LeRobotInfo& info, const EpisodeVideo& video);

// The v2.1 path of one episode's video:
// videos/chunk-{episode / chunks_size:03d}/<video_key>/episode_{episode:06d}.mp4
std::string LeRobotV21VideoPath(const LeRobotInfo& info, uint64_t episode,
                                std::string_view video_key);

// "" when every episode video's to_timestamp - from_timestamp is length / fps within a quarter
// frame; otherwise one line for the log saying in how many episodes they disagree and by how much
// (in frames and ms, the range when it varies) and that `length` decides. LeRobot's own datasets
// have been seen with (length - 1) / fps in every episode.
std::string DescribeEpisodeTimestampMismatch(const std::vector<Episode>& episodes, double fps);

// One meta/episodes.jsonl line (v2.1 style), without a newline:
// {"episode_index":0,"tasks":["..."],"length":373}
std::string LeRobotEpisodeJsonLine(const Episode& episode);

}  // namespace packfs
