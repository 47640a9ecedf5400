// Indexing a pack directory: listing its shards, reading their central directories in parallel
// (reusing an older catalog's rows for shards that did not change), and the `mkpack catalog`
// entry points built on it (RefreshCatalog, CheckCatalog).
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <unordered_map>

#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/catalog/catalog.h"
#include "core/format/tar_reader.h"
#include "core/format/zip_reader.h"
#include "core/read/pack_set.h"
#include "core/read/shard_format.h"

namespace packfs {
namespace {

std::string Joined(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

struct ReuseRows {
  std::unordered_map<std::string, uint32_t> by_name;  // shard name -> old shard id
};

}  // namespace

std::string PackDirBaseName(const std::string& dir) {
  std::error_code ec;
  std::string s = std::filesystem::absolute(dir, ec).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  std::string base = std::filesystem::path(s).filename().string();
  return base.empty() ? s : base;
}

Result<std::vector<std::string>> ListShardFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    int e = errno;
    return Status::IOError("cannot list the pack directory " + dir + ": " + ErrnoText(e), e);
  }
  std::vector<std::pair<int64_t, std::string>> found;
  std::vector<std::string> tars;  // served only when the directory holds no zip shards
  errno = 0;
  while (struct dirent* ent = ::readdir(d)) {
    int64_t index = ParseShardFileName(ent->d_name);
    if (index >= 0) found.emplace_back(index, ent->d_name);
    if (IsTarShardName(ent->d_name)) tars.emplace_back(ent->d_name);
  }
  int e = errno;
  ::closedir(d);
  if (e != 0) return Status::IOError("cannot list the pack directory " + dir + ": " + ErrnoText(e), e);
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    std::sort(tars.begin(), tars.end());
    return tars;
  }
  std::vector<std::string> names;
  names.reserve(found.size());
  for (auto& [index, name] : found) names.push_back(std::move(name));
  return names;
}

Result<bool> HoldsShardFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    int e = errno;
    return Status::IOError("cannot list the directory " + dir + ": " + ErrnoText(e), e);
  }
  bool found = false;
  errno = 0;
  while (struct dirent* ent = ::readdir(d)) {
    if (ParseShardFileName(ent->d_name) >= 0 || IsTarShardName(ent->d_name)) {
      found = true;
      break;
    }
  }
  int e = found ? 0 : errno;
  ::closedir(d);
  if (e != 0) return Status::IOError("cannot list the directory " + dir + ": " + ErrnoText(e), e);
  return found;
}

Result<CatalogData> IndexPackDir(const std::string& dir, const Catalog* reuse, int threads,
                                 IndexReport* report) {
  PACKFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListShardFiles(dir));
  return IndexShardFiles(dir, names, reuse, threads, report);
}

Result<CatalogData> IndexShardFiles(const std::string& dir, const std::vector<std::string>& names,
                                    const Catalog* reuse, int threads, IndexReport* report) {
  if (names.empty()) return Status::NotFound(dir + " holds no pack-*.zip shards or *.tar files");
  const std::string base = PackDirBaseName(dir);
  std::vector<ShardContent> contents(names.size());
  std::vector<bool> reused(names.size(), false);
  // Old shard id -> new position, for the shards whose rows we take from `reuse`.
  std::unordered_map<uint32_t, size_t> from_old;
  if (reuse != nullptr) {
    std::unordered_map<std::string, const ShardInfo*> old;
    PACKFS_ASSIGN_OR_RETURN(std::span<const ShardInfo> reuse_shards, reuse->Shards());
    for (const ShardInfo& s : reuse_shards) old.emplace(s.name, &s);
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = old.find(names[i]);
      if (it == old.end()) continue;
      Result<FileStat> st = StatFile(Joined(dir, names[i]));
      if (!st.ok() || st->size != it->second->size || st->mtime_ns != it->second->mtime_ns) continue;
      reused[i] = true;
      contents[i].info = *it->second;
      contents[i].index.fingerprint = it->second->fingerprint;
      from_old.emplace(it->second->id, i);
    }
  }
  if (!from_old.empty()) {
    PACKFS_RETURN_IF_ERROR(reuse->ForEachFile([&](const std::string& key, const Node& n) {
      auto it = from_old.find(n.shard);
      if (it == from_old.end()) return Status::OK();
      contents[it->second].index.members.push_back(MemberFromNode(key, n));
      return Status::OK();
    }));
    const auto& problems = reuse->problems();
    const auto& problem_shards = reuse->problem_shards();
    for (size_t p = 0; p < problems.size() && p < problem_shards.size(); ++p) {
      for (size_t i = 0; i < names.size(); ++i) {
        if (reused[i] && names[i] == problem_shards[p]) {
          contents[i].index.problems.push_back(problems[p]);
        }
      }
    }
  }

  std::vector<size_t> todo;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!reused[i]) todo.push_back(i);
  }
  std::vector<Status> errors(names.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t t = next++; t < todo.size(); t = next++) {
      size_t i = todo[t];
      auto src = FileShardSource::Open(Joined(dir, names[i]), base + "/" + names[i]);
      if (!src.ok()) {
        errors[i] = src.status();
        continue;
      }
      auto index = IndexShard(**src, names[i]);
      if (!index.ok()) {
        errors[i] = index.status();
        continue;
      }
      ShardInfo& info = contents[i].info;
      info.name = names[i];
      info.size = (*src)->stat().size;  // the state of the bytes we read, not of a later stat
      info.mtime_ns = (*src)->stat().mtime_ns;
      info.fingerprint = index->fingerprint;
      contents[i].index = std::move(index).value();
    }
  };
  RunWorkers(threads, todo.size(), worker);
  for (const Status& e : errors) PACKFS_RETURN_IF_ERROR(e);
  if (report != nullptr) {
    report->shards_indexed = todo.size();
    report->shards_reused = names.size() - todo.size();
  }
  return BuildNodes(std::move(contents));
}

std::vector<MissingShard> FindMissingShards(std::span<const ShardInfo> shards,
                                            const std::vector<std::string>& names) {
  bool same = names.size() == shards.size();  // both in name order: the usual case, no set
  for (size_t i = 0; same && i < names.size(); ++i) same = names[i] == shards[i].name;
  if (same) return {};
  std::unordered_map<std::string_view, bool> present;
  for (const std::string& n : names) present.emplace(n, true);
  std::vector<MissingShard> missing;
  for (const ShardInfo& s : shards) {
    if (!present.count(s.name)) missing.push_back({s.name, s.member_count});
  }
  return missing;
}

std::string DescribeMissingShards(const std::vector<MissingShard>& missing,
                                  const std::string& prefix) {
  auto one = [&](const MissingShard& m) {
    return prefix + "/" + m.name + " (" + std::to_string(m.members) +
           (m.members == 1 ? " member)" : " members)");
  };
  if (missing.size() == 1) return one(missing[0]);
  constexpr size_t kNamed = 10;
  std::string s = std::to_string(missing.size()) + " shards: ";
  for (size_t i = 0; i < missing.size() && i < kNamed; ++i) s += (i ? ", " : "") + one(missing[i]);
  if (missing.size() > kNamed) s += " and " + std::to_string(missing.size() - kNamed) + " more";
  return s;
}

Result<CatalogBuildResult> RefreshCatalog(const std::string& dir, int threads,
                                          bool forget_missing) {
  const std::string path = Joined(dir, kCatalogFileName);
  // An unreadable or damaged old catalog is simply not reused: the refresh rebuilds it.
  Result<std::unique_ptr<Catalog>> old = Catalog::Open(path);
  CatalogBuildResult result;
  PACKFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListShardFiles(dir));
  if (old.ok()) {
    PACKFS_ASSIGN_OR_RETURN(std::span<const ShardInfo> old_shards, (*old)->Shards());
    result.forgotten = FindMissingShards(old_shards, names);
    if (!result.forgotten.empty() && !forget_missing) {
      uint64_t members = 0;
      for (const MissingShard& m : result.forgotten) members += m.members;
      const bool one = result.forgotten.size() == 1;
      return Status::Stale(
          "the catalog lists " + DescribeMissingShards(result.forgotten, PackDirBaseName(dir)) +
          (one ? ", which is" : ", which are") + " missing from " + dir +
          "; refreshing would drop " + (one ? "its " : "their ") + std::to_string(members) +
          (members == 1 ? " member" : " members") + " from the catalog. Restore the " +
          (one ? "shard" : "shards") + ", or run `mkpack catalog --forget-missing " + dir +
          "` to drop them");
    }
  }
  PACKFS_ASSIGN_OR_RETURN(CatalogData data,
                          IndexShardFiles(dir, names, old.ok() ? old->get() : nullptr, threads,
                                          &result.report));
  PACKFS_RETURN_IF_ERROR(WriteCatalog(path, data));
  result.totals = data.totals;
  result.shard_count = data.shards.size();
  result.problems = std::move(data.problems);
  return result;
}

Result<std::vector<std::string>> CheckCatalog(const std::string& dir) {
  PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> cat,
                          Catalog::Open(Joined(dir, kCatalogFileName)));
  PACKFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListShardFiles(dir));
  const std::string base = PackDirBaseName(dir);
  std::vector<std::string> diffs;
  std::unordered_map<std::string, bool> on_disk;
  for (const auto& n : names) on_disk.emplace(n, false);
  PACKFS_ASSIGN_OR_RETURN(std::span<const ShardInfo> shards, cat->Shards());
  for (const ShardInfo& s : shards) {
    const std::string ref = base + "/" + s.name;
    auto it = on_disk.find(s.name);
    if (it == on_disk.end()) {
      diffs.push_back(ref + ": in the catalog (" + std::to_string(s.member_count) +
                      (s.member_count == 1 ? " member" : " members") +
                      ") but missing from the directory");
      continue;
    }
    it->second = true;
    auto src = FileShardSource::Open(Joined(dir, s.name), ref);
    if (!src.ok()) {
      diffs.push_back(src.status().message());
      continue;
    }
    if ((*src)->size() != s.size) {
      diffs.push_back(ref + ": size is " + std::to_string((*src)->size()) +
                      " bytes, the catalog says " + std::to_string(s.size));
      continue;
    }
    auto fp = ShardFingerprint(**src, s.name);
    if (!fp.ok()) {
      diffs.push_back(fp.status().message());
    } else if (*fp != s.fingerprint) {
      diffs.push_back(ref + ": central directory differs from the catalog (fingerprint)");
    }
  }
  for (const auto& n : names) {
    if (!on_disk[n]) diffs.push_back(base + "/" + n + ": not in the catalog (added since it was built)");
  }
  return diffs;
}

}  // namespace packfs
