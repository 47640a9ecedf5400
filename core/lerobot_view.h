// The LeRobot v2.1 view of a v3 dataset: one MP4 per episode and camera at the v2.1 path
// (videos/chunk-XXX/<camera>/episode_XXXXXX.mp4), each a synthesized header followed by byte
// ranges of the v3 file that holds the episode (never a copy), plus meta/episodes.jsonl.
//
// At open, meta/info.json and the episodes parquet files are read and every source MP4's moov is
// parsed once (in parallel) to size each episode file; the headers themselves are built when an
// episode is first read and kept while its source stays in the set's bounded pool. Parsed movies
// are kept in a small LRU so opening another episode of a recently read file costs only the slice.
//
// Thread-safety: the returned PackSet is safe for concurrent use. It reads the dataset through
// `dataset`, which must outlive it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/lerobot_meta.h"
#include "core/pack_set.h"
#include "core/status.h"

namespace packfs {

struct LeRobotViewOptions {
  size_t movie_cache_entries = 16;  // parsed source MP4s kept in memory
  int threads = 0;                  // moov parsing at open; 0 = one per core
};

// meta/info.json of `dataset` (nullopt when it has none). Errors name the file.
Result<std::optional<LeRobotInfo>> ReadLeRobotInfo(const PackSet& dataset);

// One episode video of the view: where it comes from and what it shows.
struct EpisodeVideoFile {
  std::string key;          // v2.1 path
  uint64_t episode = 0;
  std::string video_key;    // camera
  std::string source_key;   // the v3 MP4 holding it
  double from_seconds = 0;  // first shown frame's time in the source
  double to_seconds = 0;
  uint64_t frames = 0;
  uint64_t size = 0;        // bytes of the synthesized file
  int64_t mtime = 0;        // the source MP4's (seconds since the epoch)
};

// What a view shows, computed from the dataset (the episodes and, per episode and camera, the
// virtual file). Used by the view and by `mkpack convert-lerobot`.
struct LeRobotPlan {
  LeRobotInfo info;
  std::vector<Episode> episodes;
  std::vector<EpisodeVideoFile> videos;  // episode order, cameras sorted within an episode
  std::string episodes_jsonl;            // meta/episodes.jsonl
};
Result<LeRobotPlan> PlanLeRobotView(const PackSet& dataset, const LeRobotInfo& info,
                                    const LeRobotViewOptions& opts);

class Mp4Movie;

// Opens planned episode videos: finds the source MP4 in the dataset, parses its moov (kept in a
// small LRU shared by all callers), slices it, and returns the synthesized bytes (header + source
// extents) as a source. A slice whose size differs from the plan's (the source changed) is an
// error. Thread-safe; `dataset` must outlive it.
class EpisodeVideoOpener {
 public:
  EpisodeVideoOpener(const PackSet& dataset, size_t movie_cache_entries);
  ~EpisodeVideoOpener();
  Result<ShardLease> Open(const EpisodeVideoFile& video) const;

 private:
  Result<std::shared_ptr<const Mp4Movie>> Movie(const std::string& source_key) const;
  struct Cache;
  const PackSet& dataset_;
  std::unique_ptr<Cache> cache_;
};

// The view as a set of its own, to be merged with `dataset` in one Filesystem.
Result<std::unique_ptr<PackSet>> OpenLeRobotView(const PackSet& dataset, LeRobotPlan plan,
                                                 const LeRobotViewOptions& opts);

}  // namespace packfs
