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
#include <optional>
#include <string>
#include <vector>

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

// A source MP4 that the episodes tables name but the dataset does not hold (typically left out
// by an interrupted download), with the episode videos it would have given.
struct MissingLeRobotSource {
  std::string source_key;                // e.g. "videos/<camera>/chunk-000/file-001.mp4"
  std::vector<EpisodeVideoFile> videos;  // episode order; size, mtime and times unknown (0)
};

// What a view shows, computed from the dataset (the episodes and, per episode and camera, the
// virtual file). Used by the view and by `mkpack convert-lerobot`.
struct LeRobotPlan {
  LeRobotInfo info;
  std::vector<Episode> episodes;         // every episode of the tables, shown or not
  std::vector<EpisodeVideoFile> videos;  // episode order, cameras sorted within an episode;
                                         // only those whose source MP4 is present
  std::vector<MissingLeRobotSource> missing;  // source key order; empty for a whole dataset
  std::string episodes_jsonl;            // meta/episodes.jsonl (every episode)
  std::string timestamp_note;  // DescribeEpisodeTimestampMismatch: "" when they agree
};
// Plans the view. A source MP4 the dataset does not hold is not an error: its episode videos go
// to `missing` instead of `videos`, and the caller decides (the mount warns, `mkpack
// convert-lerobot` refuses unless --missing skip). A source that is present but unreadable, and
// bad tables, are errors naming the file.
Result<LeRobotPlan> PlanLeRobotView(const PackSet& dataset, const LeRobotInfo& info,
                                    const LeRobotViewOptions& opts);

// "videos/<camera>/chunk-000/file-001.mp4 (episodes 3-4, 7 of camera <camera>)": what a missing
// source takes away, for messages. Runs of consecutive episodes are shown as ranges.
std::string DescribeMissingSource(const MissingLeRobotSource& missing);

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

// The view as a set of its own, to be merged with `dataset` in one Filesystem. Each missing
// source of the plan becomes one warning of the set (PackSet::warnings()) naming the file and the
// episodes not shown.
Result<std::unique_ptr<PackSet>> OpenLeRobotView(const PackSet& dataset, LeRobotPlan plan,
                                                 const LeRobotViewOptions& opts);

}  // namespace packfs
