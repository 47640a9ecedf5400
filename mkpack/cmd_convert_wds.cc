// `mkpack convert-wds SRC... DST`: converts WebDataset tar shards into a pack set. Member bytes
// are copied unchanged from the tars (a PackInput is a byte range of the tar) into STORED zip
// shards, one WebDataset sample never split across zip shards.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "core/base/key.h"
#include "core/format/tar_reader.h"
#include "core/pack/pack_pipeline.h"
#include "core/read/pack_set.h"
#include "core/write/pack_writer.h"
#include "mkpack/commands.h"
#include "mkpack/pack_cli.h"

namespace packfs::mkpack {
namespace {

struct WdsArgs : PackOutputArgs {
  std::vector<std::string> paths;  // SRC... DST
  bool shard_prefix = false;
  ShardLimitArgs limits;
};

using Clock = std::chrono::steady_clock;

// The tars named by SRC arguments: files as given, directories' *.tar files in name order.
Result<std::vector<std::string>> ListTars(const std::vector<std::string>& srcs) {
  std::vector<std::string> tars;
  std::unordered_set<std::string> seen;
  for (const std::string& src : srcs) {
    std::error_code ec;
    std::vector<std::string> found;
    if (std::filesystem::is_directory(src, ec)) {
      for (const auto& ent : std::filesystem::directory_iterator(src, ec)) {
        const std::string name = ent.path().filename().string();
        if (IsTarShardName(name) && ent.is_regular_file(ec)) found.push_back(ent.path().string());
      }
      if (ec) return Status::IOError("cannot list " + src + ": " + ec.message());
      if (found.empty()) return Status::NotFound(src + " holds no *.tar files");
      std::sort(found.begin(), found.end());
    } else if (std::filesystem::is_regular_file(src, ec)) {
      found.push_back(src);
    } else {
      return Status::NotFound("source " + src + " is neither a tar file nor a directory");
    }
    for (auto& t : found) {
      std::string canon = std::filesystem::weakly_canonical(t, ec).string();
      if (!seen.insert(canon).second) return Status::InvalidArgument("tar " + t + " is given twice");
      tars.push_back(std::move(t));
    }
  }
  return tars;
}

std::string Stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

struct Inputs {
  std::vector<PackInput> inputs;
  std::vector<std::string> problems;
  uint64_t symlinks = 0, special = 0, hard_links = 0;
};

// Indexes every tar and turns its members into inputs; a key in two tars is an error naming both.
Result<Inputs> CollectInputs(const std::vector<std::string>& tars, bool shard_prefix) {
  Inputs out;
  std::unordered_map<std::string, size_t> owner;  // key -> index in tars
  for (size_t t = 0; t < tars.size(); ++t) {
    PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<FileShardSource> src,
                            FileShardSource::Open(tars[t], tars[t]));
    PACKFS_ASSIGN_OR_RETURN(TarIndex index, ReadTarIndex(*src));
    for (auto& p : index.problems) out.problems.push_back(std::move(p));
    out.symlinks += index.skipped_symlinks;
    out.special += index.skipped_special;
    out.hard_links += index.hard_links;
    const std::string prefix = shard_prefix ? Stem(tars[t]) + "/" : "";
    for (const TarMember& m : index.members) {
      PackInput in;
      in.key = prefix + m.name;
      PACKFS_RETURN_IF_ERROR(ValidateKey(in.key).WithPrefix(tars[t] + ": key " + QuoteKey(in.key)));
      auto [it, fresh] = owner.emplace(in.key, t);
      if (!fresh) {
        return Status::AlreadyExists(
            "key " + QuoteKey(in.key) + " is in both " + tars[it->second] + " and " + tars[t] +
            (shard_prefix ? "" : "; use --shard-prefix to prefix keys with each tar's name"));
      }
      in.path = tars[t];
      in.offset = m.data_offset;
      in.size = m.size;
      in.mtime = m.mtime;
      in.whole_file = false;
      out.inputs.push_back(std::move(in));
    }
  }
  return out;
}

int RunConvertWds(const WdsArgs& a) {
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "mkpack convert-wds: %s\n", st.message().c_str());
    return kExitError;
  };
  const auto t0 = Clock::now();
  if (a.paths.size() < 2) return fail(Status::InvalidArgument("expected SRC... DST"));
  const std::vector<std::string> srcs(a.paths.begin(), a.paths.end() - 1);
  const std::string dst = a.paths.back();

  PackJob job;
  job.dir = dst;
  if (Status st = ApplyShardLimits(a.limits, &job.options); !st.ok()) return fail(st);
  job.options.group_by = GroupBy::kStem;
  job.options.reproducible = a.reproducible;
  job.options.jobs = JobsOrAuto(a.jobs);
  job.options.sync = !a.no_fsync;
  job.policy = TargetPolicy::kNewOnly;
  job.dry_run = a.dry_run;
  job.catalog = !a.no_catalog;

  auto tars = ListTars(srcs);
  if (!tars.ok()) return fail(tars.status());
  auto collected = CollectInputs(*tars, a.shard_prefix);
  if (!collected.ok()) return fail(collected.status());
  Inputs& in = *collected;
  for (const std::string& p : in.problems) {
    std::fprintf(stderr, "mkpack convert-wds: %s\n", p.c_str());
  }
  std::unordered_set<std::string> samples;
  for (const PackInput& i : in.inputs) samples.insert(GroupKey(i.key, GroupBy::kStem));
  job.inputs = std::move(in.inputs);

  PackEvents events;
  RunProgressBar bar;
  bar.Attach(&events);
  events.planned = [&](const PackSummary& s) {
    for (const std::string& k : s.plan.oversized) {
      std::fprintf(stderr, "mkpack convert-wds: note: %s is larger than --max-pack-bytes; it sits "
                   "alone in its shard\n", QuoteKey(k).c_str());
    }
    for (const std::string& g : s.plan.split_groups) {
      std::fprintf(stderr, "mkpack convert-wds: note: sample %s is larger than a shard and was "
                   "split\n", QuoteKey(g).c_str());
    }
    if (in.symlinks > 0 || in.special > 0) {
      std::fprintf(stderr, "mkpack convert-wds: skipped %llu symlink(s) and %llu device/FIFO "
                   "member(s)\n", static_cast<unsigned long long>(in.symlinks),
                   static_cast<unsigned long long>(in.special));
    }
  };
  auto run = RunPackJob(std::move(job), events);
  if (!run.ok()) return fail(run.status());
  const PackSummary& s = *run;
  const PackPlan& plan = s.plan;
  const int verdict = in.problems.empty() ? kExitOk : kExitProblems;
  if (a.dry_run) {
    PrintPlannedShards(plan);
    std::printf("total\t%zu shards\t%zu samples\t%zu members\t%llu bytes\tfrom %zu tars\n",
                plan.shards.size(), samples.size(), s.inputs.size(),
                static_cast<unsigned long long>(plan.shard_bytes), tars->size());
    return verdict;
  }

  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double mbps = secs > 0 ? plan.data_bytes / secs / 1e6 : 0;
  std::fprintf(stderr,
               "mkpack convert-wds: %zu tars -> %zu samples, %zu files, %llu bytes, %zu shards in "
               "%.2f s (%.1f MB/s)%s\n",
               tars->size(), samples.size(), s.inputs.size(),
               static_cast<unsigned long long>(plan.data_bytes), plan.shards.size(), secs, mbps,
               in.problems.empty() ? ""
                                   : (", " + std::to_string(in.problems.size()) +
                                      " member(s) refused").c_str());
  if (a.json) {
    std::printf(
        "{\"tars\": %zu, \"samples\": %zu, \"files\": %zu, \"bytes\": %llu, \"shards\": %zu, "
        "\"shard_bytes\": %llu, \"seconds\": %.3f, \"mb_per_s\": %.1f, \"hard_links\": %llu, "
        "\"skipped_symlinks\": %llu, \"skipped_special\": %llu, \"problems\": %zu, "
        "\"oversized\": %zu, \"split_samples\": %zu}\n",
        tars->size(), samples.size(), s.inputs.size(),
        static_cast<unsigned long long>(plan.data_bytes), plan.shards.size(),
        static_cast<unsigned long long>(plan.shard_bytes), secs, mbps,
        static_cast<unsigned long long>(in.hard_links),
        static_cast<unsigned long long>(in.symlinks),
        static_cast<unsigned long long>(in.special), in.problems.size(), plan.oversized.size(),
        plan.split_groups.size());
  }
  return verdict;
}

}  // namespace

void RegisterConvertWds(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<WdsArgs>();
  CLI::App* sub = app.add_subcommand(
      "convert-wds",
      "Convert WebDataset tar shards (SRC: .tar files or directories of them) into a pack set in "
      "DST. Member bytes are copied unchanged; keys are the member names (leading ./ dropped). "
      "A sample (directory + name up to its first dot) never straddles two zip shards unless it "
      "alone is larger than one (reported). Tar formats: ustar, GNU, pax (GNU tar, Python "
      "tarfile). Hard links become copies; symlinks, devices and FIFOs are skipped and counted; "
      "sparse members and damaged or truncated tails are refused (listed; exit status 1).\n"
      "Exit status: 0 ok, 1 converted but some members were refused, 2 usage or I/O error.");
  sub->add_option("paths", args->paths, "SRC... DST")->required()->expected(2, -1);
  sub->add_flag("--shard-prefix", args->shard_prefix,
                "prefix every key with its tar's name without .tar (\"shard-000/000123.jpg\"), for "
                "tars whose keys repeat");
  AddShardLimitOptions(sub, &args->limits, /*members_and_align=*/true);
  AddPackOutputOptions(sub, args.get(), "reader threads prefetching small members",
                       "index the tars and print the plan (shards, members, bytes)");
  sub->callback([args, exit_code] { *exit_code = RunConvertWds(*args); });
}

}  // namespace packfs::mkpack
