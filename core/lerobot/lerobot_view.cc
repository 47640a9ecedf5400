// The LeRobot v2.1 view of a v3 dataset: planning the episode files, opening them (episode MP4s
// and v2.1 data files) lazily (see lerobot_view.h).
#include "core/lerobot/lerobot_view.h"

#include <algorithm>
#include <atomic>
#include <list>
#include <map>
#include <mutex>

#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/lerobot/lerobot_v21_data.h"
#include "core/lerobot/mp4_movie.h"
#include "core/lerobot/mp4_slice.h"
#include "core/lerobot/mp4_slice_source.h"

namespace packfs {
namespace {

constexpr uint64_t kMaxMetaFileBytes = 256ull << 20;  // info.json / episodes parquet sanity bound

Result<std::optional<Node>> FindFile(const PackSet& set, const std::string& key) {
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, set.catalog().Find(key));
  if (node && node->is_dir()) return std::optional<Node>();
  return node;
}

}  // namespace

Result<std::string> ReadLeRobotMetaFile(const PackSet& set, const std::string& key,
                                        const Node& node) {
  if (node.size > kMaxMetaFileBytes) {
    return Status::InvalidArgument(key + " is " + std::to_string(node.size) +
                                   " bytes; metadata files over 256 MiB are refused");
  }
  std::string text(node.size, '\0');
  std::shared_ptr<const ShardSource> src = set.MemberSource(key, node);
  PACKFS_ASSIGN_OR_RETURN(size_t got, src->ReadAt(0, std::span<uint8_t>(
                                                         reinterpret_cast<uint8_t*>(text.data()),
                                                         text.size())));
  text.resize(got);
  return text;
}

namespace {

// Keys of the *.parquet files under directory `dir_key`, in key order.
Status ListParquet(const PackSet& set, const Node& dir, const std::string& dir_key,
                   std::vector<std::pair<std::string, Node>>* out) {
  std::vector<Node> children;
  PACKFS_RETURN_IF_ERROR(set.catalog().List(dir, 0, dir.child_count, &children));
  for (const Node& c : children) {
    std::string key = dir_key + "/" + c.name;
    if (c.is_dir()) {
      PACKFS_RETURN_IF_ERROR(ListParquet(set, c, key, out));
    } else if (key.size() > 8 && key.compare(key.size() - 8, 8, ".parquet") == 0) {
      out->emplace_back(std::move(key), c);
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<std::pair<std::string, Node>>> ListLeRobotParquet(const PackSet& set,
                                                                     const std::string& dir_key) {
  std::vector<std::pair<std::string, Node>> out;
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> dir, set.catalog().Find(dir_key));
  if (!dir || !dir->is_dir()) return out;
  PACKFS_RETURN_IF_ERROR(ListParquet(set, *dir, dir_key, &out));
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

namespace {

Mp4SliceRequest RequestOf(const EpisodeVideoFile& v) {
  Mp4SliceRequest req;
  req.from_seconds = v.from_seconds;
  req.frame_count = v.frames;
  req.to_seconds = v.to_seconds;
  return req;
}

}  // namespace

Result<std::optional<LeRobotInfo>> ReadLeRobotInfo(const PackSet& dataset) {
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, FindFile(dataset, "meta/info.json"));
  if (!node) return std::optional<LeRobotInfo>();
  PACKFS_ASSIGN_OR_RETURN(std::string text, ReadLeRobotMetaFile(dataset, "meta/info.json", *node));
  PACKFS_ASSIGN_OR_RETURN(LeRobotInfo info,
                          ParseLeRobotInfo(text, dataset.dir() + "/meta/info.json"));
  return std::optional<LeRobotInfo>(std::move(info));
}

struct EpisodeVideoOpener::Cache {
  mutable std::mutex mu;
  size_t capacity = 16;
  std::list<std::pair<std::string, std::shared_ptr<const Mp4Movie>>> lru;  // most recent first
};

EpisodeVideoOpener::EpisodeVideoOpener(const PackSet& dataset, size_t movie_cache_entries)
    : dataset_(dataset), cache_(std::make_unique<Cache>()) {
  cache_->capacity = std::max<size_t>(movie_cache_entries, 1);
}

EpisodeVideoOpener::~EpisodeVideoOpener() = default;

Result<std::shared_ptr<const Mp4Movie>> EpisodeVideoOpener::Movie(
    const std::string& source_key) const {
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    for (auto it = cache_->lru.begin(); it != cache_->lru.end(); ++it) {
      if (it->first == source_key) {
        cache_->lru.splice(cache_->lru.begin(), cache_->lru, it);
        return it->second;
      }
    }
  }
  // Parsed outside the lock: two threads may parse the same file once each, which is harmless.
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, FindFile(dataset_, source_key));
  if (!node) return Status::Stale(source_key + " is no longer in the dataset");
  std::shared_ptr<const ShardSource> src = dataset_.MemberSource(source_key, *node);
  PACKFS_ASSIGN_OR_RETURN(std::shared_ptr<const Mp4Movie> movie, Mp4Movie::Parse(*src));
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->lru.emplace_front(source_key, movie);
  while (cache_->lru.size() > cache_->capacity) cache_->lru.pop_back();
  return movie;
}

Result<ShardLease> EpisodeVideoOpener::Open(const EpisodeVideoFile& video) const {
  PACKFS_ASSIGN_OR_RETURN(std::shared_ptr<const Mp4Movie> movie, Movie(video.source_key));
  Result<Mp4Slice> slice = SliceMp4(*movie, RequestOf(video));
  if (!slice.ok()) return slice.status().WithPrefix(video.key + " (from " + video.source_key + ")");
  if (slice->size() != video.size) {
    return Status::Stale(video.key + ": its source " + video.source_key +
                         " changed since the mount (the episode is now " +
                         std::to_string(slice->size()) + " bytes, was " +
                         std::to_string(video.size) + "); remount");
  }
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, FindFile(dataset_, video.source_key));
  if (!node) return Status::Stale(video.source_key + " is no longer in the dataset");
  std::shared_ptr<const ShardSource> base = dataset_.MemberSource(video.source_key, *node);
  return ShardLease(
      std::make_shared<Mp4SliceSource>(video.key, std::move(base), std::move(slice).value()));
}

// Built files, most recent first; `bytes` is the sum of their sizes.
struct EpisodeDataOpener::Cache {
  mutable std::mutex mu;
  uint64_t capacity = 0;
  uint64_t bytes = 0;
  std::list<std::pair<std::string, std::shared_ptr<const MemoryShardSource>>> lru;
};

EpisodeDataOpener::EpisodeDataOpener(const PackSet& dataset,
                                     std::shared_ptr<const LeRobotV21DataSchema> schema,
                                     uint64_t cache_bytes)
    : dataset_(dataset), schema_(std::move(schema)), cache_(std::make_unique<Cache>()) {
  cache_->capacity = cache_bytes;
}

EpisodeDataOpener::~EpisodeDataOpener() = default;

Result<ShardLease> EpisodeDataOpener::Open(const V21EpisodeDataFile& file) const {
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    for (auto it = cache_->lru.begin(); it != cache_->lru.end(); ++it) {
      if (it->first == file.key) {
        cache_->lru.splice(cache_->lru.begin(), cache_->lru, it);
        return ShardLease(it->second);
      }
    }
  }
  if (!schema_) return Status::Corruption(file.key + ": LeRobot view has no data schema");
  // Built outside the lock: two threads may build the same file once each, which is harmless.
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, FindFile(dataset_, file.source_key));
  if (!node) return Status::Stale(file.source_key + " is no longer in the dataset; remount");
  std::shared_ptr<const ShardSource> src = dataset_.MemberSource(file.source_key, *node);
  Result<std::vector<uint8_t>> built =
      LeRobotV21EpisodeParquet(*schema_, *src, file.first_row, file.count,
                               static_cast<int64_t>(file.episode));
  if (!built.ok()) {
    return built.status().WithPrefix(file.key + " (rows " + std::to_string(file.first_row) +
                                     ".." + std::to_string(file.first_row + file.count) +
                                     " of " + dataset_.dir() + "/" + file.source_key + ")");
  }
  if (built->size() != file.size) {
    return Status::Stale(file.key + " is " + std::to_string(built->size()) +
                         " bytes when built from " + dataset_.dir() + "/" + file.source_key +
                         ", but " + std::to_string(file.size) + " were planned at mount (did "
                         "the source change?); remount");
  }
  auto mem = std::make_shared<const MemoryShardSource>(file.key, std::move(built).value());
  if (mem->size() <= cache_->capacity) {
    std::lock_guard<std::mutex> lock(cache_->mu);
    bool present = false;
    for (const auto& [key, _] : cache_->lru) present = present || key == file.key;
    if (!present) {
      cache_->lru.emplace_front(file.key, mem);
      cache_->bytes += mem->size();
      while (cache_->bytes > cache_->capacity) {
        cache_->bytes -= cache_->lru.back().second->size();
        cache_->lru.pop_back();
      }
    }
  }
  return ShardLease(std::move(mem));
}

Result<LeRobotPlan> PlanLeRobotView(const PackSet& dataset, const LeRobotInfo& info,
                                    const LeRobotViewOptions& opts) {
  LeRobotPlan plan;
  plan.info = info;
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> ep_dir, dataset.catalog().Find("meta/episodes"));
  if (!ep_dir || !ep_dir->is_dir()) {
    return Status::NotFound(dataset.dir() + ": no meta/episodes/ directory; a LeRobot v3 dataset "
                            "records its episodes in meta/episodes/chunk-*/file-*.parquet");
  }
  std::vector<std::pair<std::string, Node>> files;
  PACKFS_RETURN_IF_ERROR(ListParquet(dataset, *ep_dir, "meta/episodes", &files));
  if (files.empty()) {
    return Status::NotFound(dataset.dir() + "/meta/episodes holds no .parquet files");
  }
  std::vector<std::shared_ptr<const ShardSource>> sources;
  std::vector<const ShardSource*> raw;
  for (const auto& [key, node] : files) {
    plan.episodes_tables.push_back(key);
    plan.episodes_mtime = std::max(plan.episodes_mtime, node.mtime);
    sources.push_back(dataset.MemberSource(key, node));
    raw.push_back(sources.back().get());
  }
  PACKFS_ASSIGN_OR_RETURN(plan.episodes, ReadLeRobotEpisodes(raw, info));
  plan.timestamp_note = DescribeEpisodeTimestampMismatch(plan.episodes, info.fps);

  // One planned file per episode and camera; then each source MP4 parsed once, its episodes
  // sliced for their sizes.
  std::map<std::string, std::vector<size_t>> by_source;
  for (const Episode& e : plan.episodes) {
    plan.episodes_jsonl += LeRobotEpisodeJsonLine(e);
    plan.episodes_jsonl += '\n';
    for (const EpisodeVideo& ev : e.videos) {
      EpisodeVideoFile v;
      v.key = LeRobotV21VideoPath(info, e.index, ev.video_key);
      PACKFS_RETURN_IF_ERROR(ValidateKey(v.key).WithPrefix(
          dataset.dir() + ": episode " + std::to_string(e.index) + " of camera " +
          QuoteKey(ev.video_key) + " would be at an unsafe path " + QuoteKey(v.key)));
      v.episode = e.index;
      v.video_key = ev.video_key;
      PACKFS_ASSIGN_OR_RETURN(v.source_key, LeRobotVideoPath(info, ev));
      v.from_seconds = ev.from_timestamp;
      v.to_seconds = ev.to_timestamp;
      v.frames = e.length;
      by_source[v.source_key].push_back(plan.videos.size());
      plan.videos.push_back(std::move(v));
    }
  }
  std::vector<const std::string*> keys;
  for (const auto& [k, _] : by_source) keys.push_back(&k);
  // absent[i]: keys[i] is not in the dataset. Each slot is written by the one worker that took
  // key i, and read after the join.
  std::vector<char> absent(keys.size(), 0);
  std::atomic<size_t> next{0};
  std::mutex err_mu;
  Status first_error;
  auto work = [&]() {
    for (size_t i = next++; i < keys.size(); i = next++) {
      const std::string& key = *keys[i];
      Status st = [&]() -> Status {
        PACKFS_ASSIGN_OR_RETURN(std::optional<Node> node, FindFile(dataset, key));
        if (!node) {
          absent[i] = 1;
          return Status::OK();
        }
        std::shared_ptr<const ShardSource> src = dataset.MemberSource(key, *node);
        PACKFS_ASSIGN_OR_RETURN(std::shared_ptr<const Mp4Movie> movie, Mp4Movie::Parse(*src));
        for (size_t idx : by_source.at(key)) {
          EpisodeVideoFile& v = plan.videos[idx];
          Result<Mp4Slice> slice = SliceMp4(*movie, RequestOf(v));
          if (!slice.ok()) {
            return slice.status().WithPrefix("episode " + std::to_string(v.episode) +
                                             " of camera " + v.video_key + " in " + key);
          }
          v.size = slice->size();
          v.mtime = node->mtime;
        }
        return Status::OK();
      }();
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (first_error.ok()) first_error = st;
        next = keys.size();
      }
    }
  };
  RunWorkers(opts.threads, keys.size(), work);
  PACKFS_RETURN_IF_ERROR(first_error);

  // The episode videos of absent sources move from `videos` to `missing` (both keep their order).
  std::vector<char> left_out(plan.videos.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!absent[i]) continue;
    MissingLeRobotSource m;
    m.source_key = *keys[i];
    for (size_t idx : by_source.at(*keys[i])) {
      m.videos.push_back(plan.videos[idx]);
      left_out[idx] = 1;
    }
    plan.missing.push_back(std::move(m));
  }
  if (!plan.missing.empty()) {
    std::vector<EpisodeVideoFile> shown;
    shown.reserve(plan.videos.size());
    for (size_t i = 0; i < plan.videos.size(); ++i) {
      if (!left_out[i]) shown.push_back(std::move(plan.videos[i]));
    }
    plan.videos = std::move(shown);
  }
  return plan;
}

std::string DescribeMissingSource(const MissingLeRobotSource& missing) {
  // Episodes per camera (a video_path template without {video_key} puts cameras in one file).
  std::map<std::string, std::vector<uint64_t>> by_camera;
  for (const EpisodeVideoFile& v : missing.videos) by_camera[v.video_key].push_back(v.episode);
  std::string out = missing.source_key + " (";
  bool first_camera = true;
  for (auto& [camera, episodes] : by_camera) {
    std::sort(episodes.begin(), episodes.end());
    if (!first_camera) out += "; ";
    first_camera = false;
    out += episodes.size() == 1 ? "episode " : "episodes ";
    for (size_t i = 0; i < episodes.size();) {
      size_t j = i;
      while (j + 1 < episodes.size() && episodes[j + 1] == episodes[j] + 1) ++j;
      if (i > 0) out += ", ";
      out += std::to_string(episodes[i]);
      if (j > i) out += "-" + std::to_string(episodes[j]);
      i = j + 1;
    }
    out += " of camera " + camera;
  }
  return out + ")";
}

Result<std::unique_ptr<PackSet>> OpenLeRobotView(const PackSet& dataset, LeRobotPlan plan,
                                                 const LeRobotViewOptions& opts,
                                                 std::shared_ptr<const void> keep_alive) {
  if (!plan.v21_data.empty() && !plan.v21_data_schema) {
    return Status::InvalidArgument(dataset.dir() + ": a LeRobot plan with v2.1 data files but "
                                   "no data schema");
  }
  // Shards: the episode videos, then the v2.1 episode data files, then the generated metadata
  // files (in memory).
  std::vector<ShardContent> shards;
  std::vector<std::string> files, refs;
  auto add = [&](const std::string& key, uint64_t size, const std::string& from, int64_t mtime) {
    ShardContent c;
    c.info.name = key;
    c.info.size = size;
    c.info.member_count = 1;
    ShardMember m;
    m.name = key;
    m.size = size;
    m.mode = 0100444;
    m.mtime = mtime;
    c.index.members.push_back(std::move(m));
    shards.push_back(std::move(c));
    files.push_back(from);
    refs.push_back(from);
  };
  int64_t newest = 0;
  for (const EpisodeVideoFile& v : plan.videos) {
    add(v.key, v.size, dataset.dir() + "/" + v.source_key, v.mtime);
    newest = std::max(newest, v.mtime);
  }
  for (const V21EpisodeDataFile& d : plan.v21_data) {
    add(d.key, d.size, dataset.dir() + "/" + d.source_key, d.mtime);
  }
  std::vector<GeneratedFile> generated;
  if (plan.layout == LeRobotLayout::kV3) {
    generated.push_back({"meta/episodes.jsonl", std::move(plan.episodes_jsonl), newest});
  } else {
    generated = std::move(plan.v21_meta);
  }
  for (const GeneratedFile& g : generated) {
    add(g.key, g.bytes.size(), "<" + g.key + ">", g.mtime);
  }
  PACKFS_ASSIGN_OR_RETURN(CatalogData data, BuildNodes(std::move(shards)));
  // A partial dataset is served for what it holds; what it lacks is reported with the set's
  // other warnings (at mount, before the daemon detaches).
  for (const MissingLeRobotSource& m : plan.missing) {
    data.problems.push_back("source MP4 missing, not shown: " + DescribeMissingSource(m) +
                            "; restore the file and remount to see them");
  }
  if (!plan.timestamp_note.empty()) data.problems.push_back(plan.timestamp_note);
  for (std::string& note : plan.v21_notes) data.problems.push_back(std::move(note));

  auto opener_impl = std::make_shared<EpisodeVideoOpener>(dataset, opts.movie_cache_entries);
  auto videos = std::make_shared<const std::vector<EpisodeVideoFile>>(std::move(plan.videos));
  auto data_opener = std::make_shared<EpisodeDataOpener>(dataset, plan.v21_data_schema,
                                                         opts.data_cache_bytes);
  auto data_files =
      std::make_shared<const std::vector<V21EpisodeDataFile>>(std::move(plan.v21_data));
  auto memory = std::make_shared<std::vector<std::shared_ptr<const MemoryShardSource>>>();
  for (const GeneratedFile& g : generated) {
    memory->push_back(std::make_shared<const MemoryShardSource>(
        g.key, std::vector<uint8_t>(g.bytes.begin(), g.bytes.end())));
  }
  ShardOpener opener = [opener_impl, videos, data_opener, data_files, memory,
                        keep_alive](const ShardToOpen& shard) -> Result<ShardLease> {
    if (shard.id < videos->size()) return opener_impl->Open((*videos)[shard.id]);
    size_t i = shard.id - videos->size();
    if (i < data_files->size()) return data_opener->Open((*data_files)[i]);
    i -= data_files->size();
    if (i >= memory->size()) {
      return Status::Corruption("LeRobot view: no file " + std::to_string(shard.id));
    }
    return ShardLease((*memory)[i]);
  };
  return PackSet::FromSources(dataset.dir() + " (LeRobot v2.1 view)", data, std::move(files),
                              std::move(refs), std::move(opener));
}

}  // namespace packfs
