// Pack pipeline: target check, plan, write and catalog of every packing command (see the header).
#include "core/pack/pack_pipeline.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/base/key.h"
#include "core/catalog/catalog.h"
#include "core/read/pack_set.h"

namespace packfs {
namespace {

// The last component of `p` as given ("media" for "data/media/"); unlike PackDirBaseName it
// does not make the path absolute, so messages name the directory the way the user did.
std::string TrailingName(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// Refuses a target that holds shards or temp shards the policy does not allow.
Status CheckTargetPolicy(const std::string& dir, TargetPolicy policy, const PackDirState& state) {
  if (policy == TargetPolicy::kNewOnly) {
    if (state.shards.empty() && state.temps.empty()) return Status::OK();
    return Status::AlreadyExists(dir + " already holds shards; convert into an empty or new "
                                 "directory");
  }
  if (!state.shards.empty() && policy == TargetPolicy::kNew) {
    return Status::AlreadyExists(
        dir + " already holds " + std::to_string(state.shards.size()) +
        " shard(s); use --append to add new shards or --resume to continue an interrupted run");
  }
  if (!state.temps.empty() && policy != TargetPolicy::kResume) {
    return Status::AlreadyExists(dir + " holds leftover temp shard " + state.temps[0] +
                                 " of an interrupted run; use --resume to continue it");
  }
  return Status::OK();
}

// Shards the catalog of `dir` lists that are gone, and whether packing `packing` (keys) beside
// the shards that remain (`present`) brings all their members back. Returns the message that
// refuses the run when some would be lost; "" when none would (then a catalog refresh may
// drop the missing shards: their members are in new shards).
std::string LostMembersMessage(const std::string& dir, const std::vector<std::string>& shards,
                               const std::unordered_map<std::string, std::string>& present,
                               const std::vector<PackInput>& packing, bool* any_missing) {
  *any_missing = false;
  auto cat = Catalog::Open(dir + "/" + kCatalogFileName);
  if (!cat.ok()) return "";
  auto cat_shards = (*cat)->Shards();  // every row is loaded by Open: cannot fail here
  if (!cat_shards.ok()) return "";
  std::vector<MissingShard> missing = FindMissingShards(*cat_shards, shards);
  if (missing.empty()) return "";
  *any_missing = true;
  std::unordered_set<uint32_t> gone;
  for (const ShardInfo& si : *cat_shards) {
    for (const MissingShard& m : missing) {
      if (m.name == si.name) gone.insert(si.id);
    }
  }
  std::unordered_set<std::string_view> packed;
  for (const PackInput& in : packing) packed.insert(in.key);
  uint64_t lost = 0;
  std::string example;
  Status st = (*cat)->ForEachFile([&](const std::string& key, const Node& n) {
    if (gone.count(n.shard) && !present.count(key) && !packed.count(key)) {
      if (lost++ == 0) example = key;
    }
    return Status::OK();
  });
  if (!st.ok()) return st.message();
  if (lost == 0) return "";
  return "the catalog of " + dir + " lists " + DescribeMissingShards(missing, TrailingName(dir)) +
         ", missing from the directory; " + std::to_string(lost) + " of the members (" +
         QuoteKey(example) + (lost > 1 ? ", ..." : "") + ") are neither in the other shards nor "
         "among the files to pack, and would be lost. Restore the missing shards, or run "
         "`mkpack catalog --forget-missing " + dir + "` first to drop them";
}

// The keys of the complete shards of `dir` (none when it holds none): key -> shard name.
// An out-parameter, not a Result: g++ 12 inlines that Result's destructor into RunPackJob and
// warns of a bogus free-nonheap-object (-Werror).
Status ReadExistingKeys(const std::string& dir, const PackDirState& state,
                        std::unordered_map<std::string, std::string>* keys) {
  if (state.shards.empty()) return Status::OK();
  auto read = ReadShardKeys(dir, state);
  if (!read.ok()) return read.status();
  *keys = std::move(*read);
  return Status::OK();
}

Status CreateTargetDir(const std::string& dir, bool parents) {
  if (parents) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IOError("cannot create " + dir + ": " + ec.message(), ec.value());
    return Status::OK();
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError("cannot create " + dir + ": " + ErrnoText(errno), errno);
  }
  return Status::OK();
}

}  // namespace

Result<PackSummary> RunPackJob(PackJob job, const PackEvents& events) {
  const std::string& dir = job.dir;
  const bool append = job.policy == TargetPolicy::kAppend;
  const bool resume = job.policy == TargetPolicy::kResume;
  PackSummary s;
  s.inputs = std::move(job.inputs);

  // 1. What the target already holds.
  PACKFS_ASSIGN_OR_RETURN(s.target, ScanPackDir(dir));
  PACKFS_RETURN_IF_ERROR(CheckTargetPolicy(dir, job.policy, s.target));

  // 2. The keys complete shards hold: skipped (resume) or refused (append).
  std::unordered_map<std::string, std::string> existing;
  PACKFS_RETURN_IF_ERROR(ReadExistingKeys(dir, s.target, &existing));
  if (!existing.empty()) {
    std::vector<PackInput> rest;
    for (PackInput& in : s.inputs) {
      auto it = existing.find(in.key);
      if (it == existing.end()) {
        rest.push_back(std::move(in));
      } else if (append) {
        return Status::AlreadyExists("key " + QuoteKey(in.key) + " (" + in.path +
                                     ") is already in " + dir + "/" + it->second);
      } else {
        s.resumed.emplace_back(in.key, it->second);
      }
    }
    s.inputs = std::move(rest);
  }
  // A catalog that lists a shard which is gone: refreshing it after this run must not drop
  // members silently. Fine when this run packs them again (a resumed run that lost shards).
  bool forget_missing = false;
  if ((append || resume) && job.catalog) {
    std::string lost =
        LostMembersMessage(dir, s.target.shards, existing, s.inputs, &forget_missing);
    if (!lost.empty()) return Status::Stale(lost);
  }

  // 3. The plan.
  PACKFS_ASSIGN_OR_RETURN(s.plan, PlanShards(s.inputs, job.options, s.target.next_index));
  if (events.planned) events.planned(s);
  if (job.dry_run) return s;

  // 4. Write.
  PACKFS_RETURN_IF_ERROR(CreateTargetDir(dir, job.create_parents));
  if (resume) {
    PACKFS_RETURN_IF_ERROR(RemoveTemps(dir, s.target));
  }
  PackOptions opts = job.options;
  if (events.writing) {
    if (const std::atomic<int>* stop = events.writing(s)) opts.stop = stop;
  }
  ProgressFn progress = [&s, &events](const WriteProgress& p) {
    s.done = p;
    if (events.progress) events.progress(p);
  };
  const bool from_writer = job.catalog_from_writer && s.target.shards.empty();
  std::vector<ShardContent> contents;
  Status st = WriteShards(dir, s.inputs, s.plan, opts, progress, from_writer ? &contents : nullptr);
  if (events.write_ended) events.write_ended();
  if (opts.stop != nullptr && st.err() == EINTR) {
    if (const int stop = opts.stop->load(); stop != 0) {
      s.stopped = stop;
      return s;
    }
  }
  PACKFS_RETURN_IF_ERROR(st);
  s.written = true;

  // 5. The command's own files, then the catalog.
  if (events.shards_complete) {
    PACKFS_RETURN_IF_ERROR(events.shards_complete(s));
  }
  if (job.catalog) {
    Status cst;
    if (from_writer && !contents.empty()) {
      auto data = BuildNodes(std::move(contents));
      cst = data.ok() ? WriteCatalog(dir + "/" + kCatalogFileName, *data) : data.status();
    } else {
      cst = RefreshCatalog(dir, opts.jobs, forget_missing).status();
    }
    if (!cst.ok()) return cst.WithPrefix("shards are complete but the catalog failed");
  }
  return s;
}

}  // namespace packfs
