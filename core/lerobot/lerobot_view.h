// The LeRobot v2.1 view of a v3 dataset: one MP4 per episode and camera at the v2.1 path
// (videos/chunk-XXX/<camera>/episode_XXXXXX.mp4), each a synthesized header followed by byte
// ranges of the v3 file that holds the episode (never a copy), plus generated metadata: in the
// v3 layout meta/episodes.jsonl beside the dataset's own files; in the v2.1 layout the v2.1
// meta/ files and data/ episode parquet files (core/lerobot/lerobot_v21_view.h,
// core/lerobot/lerobot_v21_data.h), the dataset itself then being shown under v3/.
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
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/lerobot/lerobot_meta.h"
#include "core/read/pack_set.h"

namespace packfs {

struct LeRobotV21DataSchema;

// How a mount shows a LeRobot v3 dataset.
enum class LeRobotLayout {
  kV21,  // the mount root is a v2.1 dataset; the v3 files are under v3/
  kV3,   // the v3 files at their paths, plus the episode MP4s and meta/episodes.jsonl
};

struct LeRobotViewOptions {
  size_t movie_cache_entries = 16;  // parsed source MP4s kept in memory
  uint64_t data_cache_bytes = 64ull << 20;  // built v2.1 episode data files kept in memory
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

// A metadata file the view generates (whole, in memory).
struct GeneratedFile {
  std::string key;
  std::string bytes;
  int64_t mtime = 0;  // that of the v3 file it is made from, so it stays the same across mounts
};

// One v2.1 episode data file (data/chunk-XXX/episode_XXXXXX.parquet): rows [first_row, first_row
// + count) of the v3 data file `source_key`, re-written by core/lerobot_v21_data.
struct V21EpisodeDataFile {
  std::string key;
  uint64_t episode = 0;
  std::string source_key;  // e.g. "data/chunk-000/file-001.parquet"
  uint64_t first_row = 0;
  uint64_t count = 0;      // = the episode's length
  uint64_t size = 0;       // bytes of the built file (exact, known at plan time)
  int64_t mtime = 0;       // the source data file's
};

// What a view shows, computed from the dataset (the episodes and, per episode and camera, the
// virtual file). Used by the view and by `mkpack convert-lerobot`.
struct LeRobotPlan {
  LeRobotInfo info;
  std::vector<Episode> episodes;         // every episode of the tables, shown or not
  std::vector<EpisodeVideoFile> videos;  // episode order, cameras sorted within an episode;
                                         // only those whose source MP4 is present
  std::vector<MissingLeRobotSource> missing;  // source key order; empty for a whole dataset
  std::string episodes_jsonl;            // meta/episodes.jsonl (every episode), v3 layout
  std::string timestamp_note;  // DescribeEpisodeTimestampMismatch: "" when they agree
  std::vector<std::string> episodes_tables;  // keys of meta/episodes/**/*.parquet, in key order
  int64_t episodes_mtime = 0;                // the newest of theirs

  // The layout served; kV21 only after AddLeRobotV21Files (core/lerobot/lerobot_v21_view.h) filled:
  LeRobotLayout layout = LeRobotLayout::kV3;
  std::vector<GeneratedFile> v21_meta;       // meta/info.json, episodes.jsonl, tasks.jsonl, ...
  std::vector<V21EpisodeDataFile> v21_data;  // episode order; empty when data/ is left out
  std::shared_ptr<const LeRobotV21DataSchema> v21_data_schema;  // set when v21_data is not empty
  std::vector<std::string> v21_notes;        // why a v2.1 file is left out, for the warnings
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

// Opens planned v2.1 episode data files: builds the file from its v3 source on first open and
// keeps built files in an LRU bounded by bytes (`cache_bytes`; a file larger than that is served
// but not kept). A built size other than the plan's (the source changed) is an error (Stale,
// EIO) naming the file, never other bytes. Thread-safe; `dataset` must outlive it.
class EpisodeDataOpener {
 public:
  EpisodeDataOpener(const PackSet& dataset, std::shared_ptr<const LeRobotV21DataSchema> schema,
                    uint64_t cache_bytes);
  ~EpisodeDataOpener();
  Result<ShardLease> Open(const V21EpisodeDataFile& file) const;

 private:
  struct Cache;
  const PackSet& dataset_;
  std::shared_ptr<const LeRobotV21DataSchema> schema_;
  std::unique_ptr<Cache> cache_;
};

// The *.parquet files under directory `dir_key` of `set` (recursively), sorted by key; none when
// there is no such directory.
Result<std::vector<std::pair<std::string, Node>>> ListLeRobotParquet(const PackSet& set,
                                                                     const std::string& dir_key);

// The bytes of file `key` (`node`) of `set`; files over 256 MiB are refused (InvalidArgument).
Result<std::string> ReadLeRobotMetaFile(const PackSet& set, const std::string& key,
                                        const Node& node);

// The view as a set of its own, to be merged in one Filesystem with `dataset` (v3 layout) or with
// `dataset` under v3/ (v2.1 layout: OpenPrefixedSet). It serves the plan's episode videos and, by
// its layout, meta/episodes.jsonl or the v2.1 metadata files. Each missing source of the plan
// becomes one warning of the set (PackSet::warnings()) naming the file and the episodes not
// shown; so do the plan's timestamp note and v21_notes. `keep_alive` (may be null) is held as
// long as the set's reads may need `dataset` (pass the dataset's owner when the Filesystem does
// not own it). The v2.1 episode data files are built when first read (EpisodeDataOpener).
Result<std::unique_ptr<PackSet>> OpenLeRobotView(const PackSet& dataset, LeRobotPlan plan,
                                                 const LeRobotViewOptions& opts,
                                                 std::shared_ptr<const void> keep_alive = nullptr);

}  // namespace packfs
