// `mkpack convert-lerobot SRC DST`: turns a LeRobot dataset into a self-contained pack set with
// one MP4 per episode and camera. For v3 sources each episode video is sliced out of the
// multi-episode MP4 (header synthesized, sample bytes copied unchanged — never re-encoded) and
// stored at its v2.1 path, the cameras of one episode in one shard; DST/video_index.json maps
// every episode and camera to its blob reference, time range and frame count. In the v2.1
// layout (the default) DST is the v2.1 dataset `packfs --lerobot-view v2.1` shows: the generated
// v2.1 meta/ files and data/chunk-XXX/episode_XXXXXX.parquet files (core/lerobot/lerobot_v21_view.h) as
// real members, and meta/, data/ and the other v3 files copied under v3/; in the v3 layout they
// are copied in place and meta/episodes.jsonl is added. v2.x sources (one MP4 per episode
// already) are packed unchanged. A v3 dataset missing source MP4s is refused, listing every one,
// unless --missing skip converts what is there (the skipped episode videos are listed in
// video_index.json and the summary).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <tuple>
#include <vector>

#include "core/base/json.h"
#include "core/base/key.h"
#include "core/lerobot/lerobot_v21_view.h"
#include "core/lerobot/lerobot_view.h"
#include "core/open/open_source.h"
#include "core/pack/pack_pipeline.h"
#include "core/read/pack_set.h"
#include "core/write/pack_writer.h"
#include "mkpack/commands.h"
#include "mkpack/pack_cli.h"

namespace packfs::mkpack {
namespace {

struct LeRobotArgs : PackOutputArgs {
  std::string src, dst;
  ShardLimitArgs limits;  // --max-pack-bytes only: an episode's cameras share a shard
  std::string missing = "error";  // a source MP4 the episodes table names is absent: error | skip
  std::string layout = "v2.1";    // of a v3 source's output: v2.1 | v3
};

using Clock = std::chrono::steady_clock;

// An episode file (video or v2.1 data) opened when the writer first reads it and released once
// read to the end, so converting 10,000 episodes never holds more than a few synthesized headers
// or built parquet files at once. `Opener` is EpisodeVideoOpener or EpisodeDataOpener.
template <typename Opener, typename File>
class LazyEpisodeSource final : public ShardSource {
 public:
  LazyEpisodeSource(std::shared_ptr<const Opener> opener, File file)
      : opener_(std::move(opener)), file_(std::move(file)) {}
  const std::string& name() const override { return file_.key; }
  uint64_t size() const override { return file_.size; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    ShardLease src;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!open_) {
        PACKFS_ASSIGN_OR_RETURN(open_, opener_->Open(file_));
      }
      src = open_;
    }
    PACKFS_ASSIGN_OR_RETURN(size_t got, src->ReadAt(offset, buf));
    if (offset + got >= file_.size) {
      std::lock_guard<std::mutex> lock(mu_);
      open_.reset();
    }
    return got;
  }

 private:
  std::shared_ptr<const Opener> opener_;
  File file_;
  mutable std::mutex mu_;
  mutable ShardLease open_;
};

struct Converted {
  std::vector<PackInput> inputs;
  LeRobotPlan plan;
  std::vector<size_t> video_input;  // plan.videos[i] -> index in inputs
  bool v3 = false;
};

// Every file of the dataset as an input read through the set (loose file or pack member), stored
// at `prefix` + its key.
Status AddDatasetFiles(const PackSet& set, bool skip_v3_videos, const std::string& prefix,
                       Converted* out) {
  static const std::regex kV21Episode(R"(^videos/chunk-\d+/[^/]+/episode_(\d+)\.mp4$)");
  return set.catalog().ForEachFile([&](const std::string& key, const Node& node) -> Status {
    if (skip_v3_videos && key.rfind("videos/", 0) == 0) return Status::OK();
    PackInput in;
    in.key = prefix + key;
    in.path = set.dir() + "/" + key;
    in.size = node.size;
    in.mtime = node.mtime;
    in.whole_file = false;
    in.source = set.MemberSource(key, node);
    std::smatch m;
    in.group = std::regex_match(key, m, kV21Episode) ? "episode " + m[1].str() : "file " + key;
    out->inputs.push_back(std::move(in));
    return Status::OK();
  });
}

// The refusal of a partial dataset: every missing source with its episodes, and what to do.
Status MissingSourcesError(const PackSet& set, const LeRobotPlan& plan) {
  size_t videos = 0;
  std::string list;
  for (const MissingLeRobotSource& m : plan.missing) {
    videos += m.videos.size();
    list += "\n  " + DescribeMissingSource(m);
  }
  return Status::NotFound(
      set.dir() + " lacks " + std::to_string(plan.missing.size()) + " source MP4(s) that " +
      std::to_string(videos) + " episode video(s) are cut from:" + list +
      "\nrestore them (an interrupted download?), or convert the rest with --missing skip");
}

// A generated file as an input.
PackInput GeneratedInput(const std::string& key, const std::string& bytes, int64_t mtime) {
  PackInput in;
  in.key = key;
  in.path = "<" + key + ">";
  in.size = bytes.size();
  in.mtime = mtime;
  in.whole_file = false;
  in.source =
      std::make_shared<MemoryShardSource>(key, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  in.group = "file " + key;
  return in;
}

Result<Converted> Collect(const PackSet& set, const LeRobotInfo& info, int threads,
                          bool skip_missing, bool v21_layout) {
  Converted c;
  c.v3 = IsLeRobotV3(info);
  if (!c.v3) {
    PACKFS_RETURN_IF_ERROR(AddDatasetFiles(set, false, "", &c));
    return c;
  }
  LeRobotViewOptions vopts;
  vopts.threads = threads;
  PACKFS_ASSIGN_OR_RETURN(c.plan, PlanLeRobotView(set, info, vopts));
  if (!c.plan.missing.empty() && !skip_missing) return MissingSourcesError(set, c.plan);
  if (v21_layout) {
    Status st = AddLeRobotV21Files(set, &c.plan);
    if (!st.ok()) return st.WithPrefix("--layout v2.1 (--layout v3 converts as it is)");
    PACKFS_RETURN_IF_ERROR(AddDatasetFiles(set, true, kLeRobotV3Prefix, &c));
    for (const GeneratedFile& g : c.plan.v21_meta) {
      c.inputs.push_back(GeneratedInput(g.key, g.bytes, g.mtime));
    }
    // The v2.1 episode data files, built as they are written (the mount's bytes); the built
    // files are not kept, each is read once.
    auto data_opener =
        std::make_shared<const EpisodeDataOpener>(set, c.plan.v21_data_schema, 0);
    for (const V21EpisodeDataFile& d : c.plan.v21_data) {
      PackInput in;
      in.key = d.key;
      in.path = set.dir() + "/" + d.source_key + " (episode " + std::to_string(d.episode) + ")";
      in.size = d.size;
      in.mtime = d.mtime;
      in.whole_file = false;
      in.source =
          std::make_shared<LazyEpisodeSource<EpisodeDataOpener, V21EpisodeDataFile>>(data_opener,
                                                                                     d);
      in.group = "episode " + std::to_string(d.episode);
      c.inputs.push_back(std::move(in));
    }
  } else {
    PACKFS_RETURN_IF_ERROR(AddDatasetFiles(set, true, "", &c));
  }
  PACKFS_ASSIGN_OR_RETURN(std::optional<Node> existing, set.catalog().Find("meta/episodes.jsonl"));
  if (!existing && !v21_layout) {
    c.inputs.push_back(GeneratedInput("meta/episodes.jsonl", c.plan.episodes_jsonl, 0));
  }
  auto opener = std::make_shared<const EpisodeVideoOpener>(set, 8);
  for (const EpisodeVideoFile& v : c.plan.videos) {
    PackInput in;
    in.key = v.key;
    in.path = set.dir() + "/" + v.source_key + " (episode " + std::to_string(v.episode) + ")";
    in.size = v.size;
    in.whole_file = false;
    in.source =
        std::make_shared<LazyEpisodeSource<EpisodeVideoOpener, EpisodeVideoFile>>(opener, v);
    in.group = "episode " + std::to_string(v.episode);
    c.video_input.push_back(c.inputs.size());
    c.inputs.push_back(std::move(in));
  }
  return c;
}

int64_t Nanos(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

// The episode videos left out by --missing skip, in episode then camera order.
std::vector<const EpisodeVideoFile*> Skipped(const LeRobotPlan& plan) {
  std::vector<const EpisodeVideoFile*> out;
  for (const MissingLeRobotSource& m : plan.missing) {
    for (const EpisodeVideoFile& v : m.videos) out.push_back(&v);
  }
  std::sort(out.begin(), out.end(), [](const EpisodeVideoFile* a, const EpisodeVideoFile* b) {
    return std::tie(a->episode, a->video_key) < std::tie(b->episode, b->video_key);
  });
  return out;
}

// DST/video_index.json: per episode and camera, where its file is and what it shows.
// `inputs` and `plan` are the run's (PackSummary), which packed every input of `c`.
std::string VideoIndexJson(const Converted& c, const std::vector<PackInput>& inputs,
                           const PackPlan& plan, const std::string& prefix) {
  std::vector<std::string> shard_of(inputs.size());
  for (const PlannedShard& s : plan.shards) {
    for (size_t m : s.members) shard_of[m] = prefix + "/" + s.name;
  }
  std::map<uint64_t, std::vector<size_t>> by_episode;
  for (size_t i = 0; i < c.plan.videos.size(); ++i) by_episode[c.plan.videos[i].episode].push_back(i);
  std::string out = "{\n  \"format\": \"packfs-lerobot-video-index\",\n  \"version\": 1,\n";
  out += "  \"fps\": " + std::to_string(c.plan.info.fps) + ",\n  \"episodes\": [";
  bool first_ep = true;
  for (const auto& [ep, vids] : by_episode) {
    out += first_ep ? "\n" : ",\n";
    first_ep = false;
    out += "    {\"episode_index\": " + std::to_string(ep) + ", \"videos\": {";
    bool first = true;
    for (size_t i : vids) {
      const EpisodeVideoFile& v = c.plan.videos[i];
      const PackInput& in = inputs[c.video_input[i]];
      out += first ? "\n" : ",\n";
      first = false;
      const double dur = c.plan.info.fps > 0 ? static_cast<double>(v.frames) / c.plan.info.fps : 0;
      out += "      " + JsonString(v.video_key) + ": {\"ref\": " +
             JsonString(FormatRef(in.key, shard_of[c.video_input[i]])) +
             ", \"from_ns\": 0, \"to_ns\": " + std::to_string(Nanos(dur)) +
             ", \"frames\": " + std::to_string(v.frames) + ", \"bytes\": " +
             std::to_string(v.size) + ", \"source\": " + JsonString(v.source_key) +
             ", \"source_from_ns\": " + std::to_string(Nanos(v.from_seconds)) +
             ", \"source_to_ns\": " + std::to_string(Nanos(v.from_seconds + dur)) + "}";
    }
    out += "\n    }}";
  }
  // Episode videos left out by --missing skip: which episode, which camera, which file was absent.
  out += "\n  ],\n  \"skipped\": [";
  bool first_skip = true;
  for (const EpisodeVideoFile* v : Skipped(c.plan)) {
    out += first_skip ? "\n" : ",\n";
    first_skip = false;
    out += "    {\"episode_index\": " + std::to_string(v->episode) + ", \"camera\": " +
           JsonString(v->video_key) + ", \"missing\": " + JsonString(v->source_key) + "}";
  }
  out += first_skip ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) return Status::IOError("cannot write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IOError("cannot rename " + tmp + " to " + path + ": " + ErrnoText(errno), errno);
  }
  return Status::OK();
}

// The dry run's plan: every episode video (and v2.1 data file) with its source, then the shards.
void PrintLeRobotPlan(const Converted& c, const PackSummary& s, size_t skipped) {
  for (const EpisodeVideoFile& v : c.plan.videos) {
    std::printf("episode %llu\t%s\t%s\tfrom %.6f s\t%llu frames\t%llu bytes\t<- %s\n",
                static_cast<unsigned long long>(v.episode), v.video_key.c_str(), v.key.c_str(),
                v.from_seconds, static_cast<unsigned long long>(v.frames),
                static_cast<unsigned long long>(v.size), v.source_key.c_str());
  }
  for (const EpisodeVideoFile* v : Skipped(c.plan)) {
    std::printf("episode %llu\t%s\t%s\tskipped: %s is missing\n",
                static_cast<unsigned long long>(v->episode), v->video_key.c_str(),
                v->key.c_str(), v->source_key.c_str());
  }
  for (const V21EpisodeDataFile& d : c.plan.v21_data) {
    std::printf("episode %llu\tdata\t%s\trows %llu-%llu\t%llu bytes\t<- %s\n",
                static_cast<unsigned long long>(d.episode), d.key.c_str(),
                static_cast<unsigned long long>(d.first_row),
                static_cast<unsigned long long>(d.first_row + d.count),
                static_cast<unsigned long long>(d.size), d.source_key.c_str());
  }
  PrintPlannedShards(s.plan);
  std::printf("total\t%zu shards\t%zu episodes\t%zu episode videos\t%zu skipped\t%zu files\t"
              "%llu bytes\t(%s)\n",
              s.plan.shards.size(), c.plan.episodes.size(), c.plan.videos.size(), skipped,
              s.inputs.size(), static_cast<unsigned long long>(s.plan.shard_bytes),
              c.v3 ? "v3: episodes sliced from multi-episode MP4s" : "v2: packed unchanged");
}

int RunConvertLeRobot(const LeRobotArgs& a) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "mkpack convert-lerobot: %s\n", st.message().c_str());
    return kExitError;
  };
  const auto t0 = Clock::now();
  PackJob job;
  job.dir = a.dst;
  if (Status st = ApplyShardLimits(a.limits, &job.options); !st.ok()) return fail(st);
  job.options.group_by = GroupBy::kInput;
  job.options.reproducible = a.reproducible;
  job.options.jobs = JobsOrAuto(a.jobs);
  job.options.sync = !a.no_fsync;
  job.policy = TargetPolicy::kNewOnly;
  job.dry_run = a.dry_run;
  job.catalog = !a.no_catalog;

  OpenSourceOptions open_options;  // a local directory, packed or not; a URL is a path here
  open_options.loose = OpenSourceOptions::Loose::kAlways;
  auto set = OpenSourceSet(SourceLocation{a.src, {}}, open_options);
  if (!set.ok()) return fail(set.status());
  auto info = ReadLeRobotInfo(**set);
  if (!info.ok()) return fail(info.status());
  if (!*info) {
    return fail(Status::NotFound(a.src + " holds no meta/info.json: not a LeRobot dataset"));
  }
  auto conv = Collect(**set, **info, job.options.jobs, a.missing == "skip", a.layout == "v2.1");
  if (!conv.ok()) return fail(conv.status());
  Converted& c = *conv;
  const size_t skipped = Skipped(c.plan).size();
  if (!c.plan.timestamp_note.empty()) {
    std::fprintf(stderr, "mkpack convert-lerobot: note: %s\n", c.plan.timestamp_note.c_str());
  }
  for (const std::string& note : c.plan.v21_notes) {
    std::fprintf(stderr, "mkpack convert-lerobot: note: %s\n", note.c_str());
  }
  if (skipped > 0) {
    std::fprintf(stderr,
                 "mkpack convert-lerobot: skipping %zu episode video(s): %zu source MP4(s) of %s "
                 "are missing:\n",
                 skipped, c.plan.missing.size(), a.src.c_str());
    for (const MissingLeRobotSource& m : c.plan.missing) {
      std::fprintf(stderr, "  %s\n", DescribeMissingSource(m).c_str());
    }
  }
  const int done_status = skipped > 0 ? kExitProblems : kExitOk;
  job.inputs = std::move(c.inputs);

  PackEvents events;
  RunProgressBar bar;
  bar.Attach(&events);
  if (c.v3) {
    events.shards_complete = [&](const PackSummary& s) {
      const std::string json = VideoIndexJson(c, s.inputs, s.plan, PackDirBaseName(a.dst));
      return WriteFileAtomically(a.dst + "/video_index.json", json)
          .WithPrefix("shards are complete but video_index.json failed");
    };
  }
  auto run = RunPackJob(std::move(job), events);
  if (!run.ok()) return fail(run.status());
  const PackSummary& s = *run;
  if (a.dry_run) {
    PrintLeRobotPlan(c, s, skipped);
    return done_status;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr,
               "mkpack convert-lerobot: %zu episodes, %zu episode videos%s, %zu files, %llu "
               "bytes, %zu shards in %.2f s (%s)\n",
               c.plan.episodes.size(), c.plan.videos.size(),
               skipped > 0 ? (" (" + std::to_string(skipped) +
                              " skipped: source missing, see video_index.json)").c_str()
                           : "",
               s.inputs.size(), static_cast<unsigned long long>(s.plan.data_bytes),
               s.plan.shards.size(), secs,
               c.v3 ? "v3 episodes sliced, not re-encoded" : "v2 dataset packed unchanged");
  if (a.json) {
    std::printf("{\"episodes\": %zu, \"episode_videos\": %zu, \"skipped_episode_videos\": %zu, "
                "\"missing_sources\": %zu, \"files\": %zu, \"bytes\": %llu, "
                "\"shards\": %zu, \"seconds\": %.3f, \"source_version\": %s}\n",
                c.plan.episodes.size(), c.plan.videos.size(), skipped, c.plan.missing.size(),
                s.inputs.size(),
                static_cast<unsigned long long>(s.plan.data_bytes), s.plan.shards.size(), secs,
                JsonString(c.plan.info.codebase_version.empty() ? (*info)->codebase_version
                                                                : c.plan.info.codebase_version)
                    .c_str());
  }
  return done_status;
}

}  // namespace

void RegisterConvertLeRobot(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<LeRobotArgs>();
  CLI::App* sub = app.add_subcommand(
      "convert-lerobot",
      "Convert a LeRobot dataset (SRC: its root as plain files, or a pack set holding it) into a "
      "self-contained pack set in DST with one MP4 per episode and camera at the v2.1 paths "
      "(videos/chunk-XXX/<camera>/episode_XXXXXX.mp4). v3 episodes are sliced from the "
      "multi-episode MP4s without re-encoding; by default (--layout v2.1) DST is a v2.1 dataset "
      "(the v2.1 meta/ and data/ episode files that `packfs --lerobot-view v2.1` shows, the v3 "
      "meta/, data/ and "
      "other files copied under v3/); with --layout v3 they are copied in place and "
      "meta/episodes.jsonl is added; DST/video_index.json maps each episode and camera to its "
      "blob reference, time range (ns) and frame count. v2.x datasets are packed unchanged. The "
      "cameras of one episode share a shard.\nA v3 dataset whose episodes table names source MP4s "
      "it does not hold (an interrupted download) is refused, listing every missing file and its "
      "episodes, unless --missing skip.\nExit status: 0 ok, 1 converted but episode videos were "
      "skipped (--missing skip), 2 usage or I/O error (or missing sources without --missing skip).");
  sub->add_option("src", args->src, "LeRobot dataset root (plain files or a pack set)")->required();
  sub->add_option("dst", args->dst, "new pack directory")->required();
  AddShardLimitOptions(sub, &args->limits, /*members_and_align=*/false);
  sub->add_option("--missing", args->missing,
                  "a source MP4 that the episodes table names but SRC does not hold: error "
                  "(refuse, listing every missing file) or skip (convert the rest; the skipped "
                  "episode videos are listed on stderr and in video_index.json, exit status 1)")
      ->check(CLI::IsMember({"error", "skip"}))
      ->capture_default_str();
  sub->add_option("--layout", args->layout,
                  "of a v3 dataset: v2.1 (DST is a LeRobot v2.1 dataset: generated v2.1 meta/ "
                  "files, the v3 files under v3/) or v3 (the v3 files in place, plus "
                  "meta/episodes.jsonl)")
      ->check(CLI::IsMember({"v2.1", "v3"}))
      ->capture_default_str();
  AddPackOutputOptions(sub, args.get(), "threads reading the source (and parsing MP4s)",
                       "print the plan (episodes, their sources, ranges, sizes, v2.1 data files, "
                       "shards)");
  sub->callback([args, exit_code] { *exit_code = RunConvertLeRobot(*args); });
}

}  // namespace packfs::mkpack
