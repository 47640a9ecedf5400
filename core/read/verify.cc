// Pack directory verification: index, uniqueness, CRC-32 of every member, catalog agreement.
#include "core/read/verify.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/base/crc32.h"
#include "core/base/key.h"
#include "core/base/parallel_for.h"
#include "core/catalog/catalog.h"
#include "core/read/pack_set.h"
#include "core/read/shard_format.h"
#include "core/write/pack_writer.h"

namespace packfs {

namespace {

constexpr size_t kWindow = 8u << 20;  // 8 MiB reads: small members share one syscall

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

}  // namespace

Status CheckMemberCrcs(const ShardSource& src, const std::vector<ShardMember>& members,
                       std::vector<std::string>* problems, uint64_t* bytes_checked) {
  std::vector<const ShardMember*> order;
  order.reserve(members.size());
  for (const auto& m : members) order.push_back(&m);
  std::sort(order.begin(), order.end(), [](const ShardMember* a, const ShardMember* b) {
    return a->data_offset < b->data_offset;
  });

  // A small shard needs no more than its own size (and no 8 MiB of zeroed memory per call).
  std::vector<uint8_t> buf(static_cast<size_t>(std::clamp<uint64_t>(src.size(), 1, kWindow)));
  uint64_t win_start = 0, win_len = 0;  // bytes of the shard currently in buf
  for (const ShardMember* m : order) {
    uint32_t crc = 0;
    uint64_t pos = m->data_offset;
    uint64_t end = m->data_offset + m->size;
    bool failed = false;
    while (pos < end) {
      if (pos < win_start || pos >= win_start + win_len) {
        auto n = src.ReadAt(pos, buf);
        if (!n.ok()) return n.status();
        win_start = pos;
        win_len = *n;
        if (win_len == 0) {
          problems->push_back(src.name() + ": member " + QuoteKey(m->name) +
                              ": data ends early (shard truncated?)");
          failed = true;
          break;
        }
      }
      uint64_t take = std::min(end, win_start + win_len) - pos;
      crc = Crc32(crc, buf.data() + (pos - win_start), static_cast<size_t>(take));
      pos += take;
    }
    if (failed) continue;
    *bytes_checked += m->size;
    if (crc != m->crc32) {
      problems->push_back(src.name() + ": member " + QuoteKey(m->name) + ": CRC-32 is " + Hex(crc) +
                          " but the zip records " + Hex(m->crc32) + " (data damaged)");
    }
  }
  return Status::OK();
}

Result<VerifyReport> VerifyPackDir(const std::string& dir_in, int threads) {
  std::string dir = dir_in;  // "media/" is named "media" in messages
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  PACKFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListShardFiles(dir));
  // Temp shards of a `mkpack pack` that stopped: the set is incomplete, however sound the
  // complete shards are. Found by the writer's own naming rule (ScanPackDir).
  PACKFS_ASSIGN_OR_RETURN(PackDirState state, ScanPackDir(dir));
  std::vector<std::string> leading_problems;
  const std::string resume = "`mkpack pack --resume SRC " + dir + "`";
  if (names.empty()) {
    if (state.temps.empty()) {
      leading_problems.push_back(
          dir + " holds no shards: looked for pack-NNNN.zip files (what `mkpack pack` writes) "
          "and *.tar shards, and found none; give the pack directory (the DST of `mkpack "
          "pack`), not its source");
    } else {
      leading_problems.push_back(
          dir + " holds no complete shard, only " + state.temps[0] +
          (state.temps.size() > 1 ? " (and " + std::to_string(state.temps.size() - 1) + " more)"
                                  : std::string()) +
          " left by a `mkpack pack` that stopped before its first shard was finished; run " +
          resume + " to pack it");
    }
  } else {
    for (const std::string& t : state.temps) {
      leading_problems.push_back(
          dir + "/" + t + " is an unfinished shard left by an interrupted `mkpack pack`: the set "
          "is incomplete; run " + resume + " to finish it (or delete the file if the set is "
          "complete without it)");
    }
  }
  if (!names.empty() && ShardFormatOf(names[0]) == ShardFormat::kTar) {
    return Status::InvalidArgument(
        dir + " holds tar shards (" + names[0] + "), which record no checksums to verify; "
        "mkpack verify checks zip pack sets: convert the tars with `mkpack convert-wds` (or "
        "mount them as they are)");
  }
  VerifyInput in;
  {
    // Messages name shards the way references do: "<pack dir name>/<shard>".
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    size_t slash = d.rfind('/');
    in.prefix = slash == std::string::npos ? d : d.substr(slash + 1);
  }
  in.refresh_command = "mkpack catalog " + dir;
  in.forget_missing_command = "mkpack catalog --forget-missing " + dir;
  in.names = names;
  in.open = [&](size_t i) -> Result<std::unique_ptr<ShardSource>> {
    PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<FileShardSource> src,
                            FileShardSource::Open(dir + "/" + names[i], in.prefix + "/" + names[i]));
    return std::unique_ptr<ShardSource>(std::move(src));
  };
  std::unique_ptr<Catalog> catalog;
  std::string cat_path = dir + "/" + kCatalogFileName;
  if (StatFile(cat_path).ok()) {
    in.catalog_present = true;
    auto cat = Catalog::Open(cat_path);
    if (!cat.ok()) {
      in.catalog_error = cat.status().message();
    } else {
      catalog = std::move(cat).value();
      in.catalog = catalog.get();
    }
  }
  VerifyReport report = VerifyShards(in, threads);
  report.problems.insert(report.problems.begin(), leading_problems.begin(),
                         leading_problems.end());
  return report;
}

VerifyReport VerifyShards(const VerifyInput& in, int threads) {
  const std::vector<std::string>& names = in.names;
  const std::string& prefix = in.prefix;
  const std::string& refresh = in.refresh_command;
  VerifyReport report;
  report.shards = names.size();

  struct PerShard {
    ShardIndex index;
    uint64_t size = 0;
    std::vector<std::string> problems;
    uint64_t bytes = 0;
    bool indexed = false;
  };
  std::vector<PerShard> per(names.size());

  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < names.size(); i = next++) {
      PerShard& ps = per[i];
      auto src = in.open(i);
      if (!src.ok()) {
        ps.problems.push_back(src.status().message());
        continue;
      }
      ps.size = (*src)->size();
      auto idx = ReadZipIndex(**src);
      if (!idx.ok()) {
        ps.problems.push_back(idx.status().message());
        continue;
      }
      ps.index = std::move(idx).value();
      ps.indexed = true;
      for (const auto& p : ps.index.problems) ps.problems.push_back(p);
      Status st = CheckMemberCrcs(**src, ps.index.members, &ps.problems, &ps.bytes);
      if (!st.ok()) ps.problems.push_back(st.message());
    }
  };
  RunWorkers(threads, names.size(), worker);

  // Keys unique across shards: key -> (shard index, member) of the first occurrence.
  std::unordered_map<std::string_view, std::pair<size_t, const ShardMember*>> seen;
  for (size_t i = 0; i < per.size(); ++i) {
    for (auto& p : per[i].problems) report.problems.push_back(std::move(p));
    if (!per[i].indexed) continue;
    report.members += per[i].index.members.size();
    report.bytes += per[i].bytes;
    for (const auto& m : per[i].index.members) {
      auto [it, inserted] = seen.emplace(m.name, std::make_pair(i, &m));
      if (!inserted) {
        report.problems.push_back("key " + QuoteKey(m.name) + " is in both " + prefix + "/" +
                                  names[it->second.first] + " and " + prefix + "/" + names[i]);
      }
    }
  }

  // A key that is a file and also a directory of another key ("a" and "a/b") has no place in a
  // tree: catalog, ls, unpack and the mount refuse such a set, so verify reports it too. Checked
  // in shard and member order so the report reads the same on every run.
  std::unordered_set<std::string_view> file_and_dir;
  for (size_t i = 0; i < per.size(); ++i) {
    if (!per[i].indexed) continue;
    for (const auto& m : per[i].index.members) {
      std::string_view key = m.name;
      for (size_t p = key.find('/'); p != std::string_view::npos; p = key.find('/', p + 1)) {
        auto it = seen.find(key.substr(0, p));
        if (it == seen.end() || !file_and_dir.insert(it->first).second) continue;
        report.problems.push_back(
            "key " + QuoteKey(it->first) + " (in " + prefix + "/" + names[it->second.first] +
            ") is a file but also a directory of key " + QuoteKey(key) + " (in " + prefix + "/" +
            names[i] + "); catalog, ls, unpack and packfs refuse such a set: rename one of "
            "them and pack again");
      }
    }
  }

  // Catalog agreement.
  report.catalog_present = in.catalog_present;
  if (in.catalog_present) {
    if (in.catalog == nullptr) {
      report.problems.push_back(in.catalog_error);
    } else if (Result<std::span<const ShardInfo>> catalog_shards = in.catalog->Shards();
               !catalog_shards.ok()) {
      report.problems.push_back(catalog_shards.status().message());
    } else {
      const Catalog& c = *in.catalog;
      std::unordered_map<std::string, size_t> by_name;
      for (size_t i = 0; i < names.size(); ++i) by_name.emplace(names[i], i);
      std::vector<bool> catalog_has(names.size(), false);
      for (const ShardInfo& si : *catalog_shards) {
        auto it = by_name.find(si.name);
        if (it == by_name.end()) {
          // A plain refresh would drop the shard's members: say so, and what keeps them.
          const std::string forget =
              in.forget_missing_command.empty()
                  ? "run `" + refresh + "` to rebuild the catalog without them"
                  : "run `" + in.forget_missing_command + "` to drop them from the catalog";
          report.problems.push_back("catalog lists " + prefix + "/" + si.name + " (" +
                                    std::to_string(si.member_count) +
                                    (si.member_count == 1 ? " member" : " members") +
                                    ") but the shard is missing: restore the file, or " + forget);
          continue;
        }
        catalog_has[it->second] = true;
        const PerShard& ps = per[it->second];
        if (!ps.indexed) continue;
        if (si.size != ps.size || si.fingerprint != ps.index.fingerprint) {
          report.problems.push_back("catalog is stale for " + prefix + "/" + si.name +
                                    " (the shard changed since the catalog was built); run "
                                    "`" + refresh + "`");
        }
      }
      for (size_t i = 0; i < names.size(); ++i) {
        if (!catalog_has[i]) {
          report.problems.push_back("catalog does not list " + prefix + "/" + names[i] +
                                    "; run `" + refresh + "`");
        }
      }
      // Every catalog file entry must match the member as indexed now.
      std::vector<uint32_t> shard_of_catalog;  // catalog shard id -> our index
      for (const ShardInfo& si : *catalog_shards) {
        auto it = by_name.find(si.name);
        shard_of_catalog.push_back(it == by_name.end() ? UINT32_MAX
                                                       : static_cast<uint32_t>(it->second));
      }
      uint64_t catalog_files = 0;
      size_t mismatches = 0;
      Status st = c.ForEachFile([&](const std::string& key, const Node& n) -> Status {
        // Entries of a missing shard were reported with the shard, and what to do differs.
        if (n.shard < shard_of_catalog.size() && shard_of_catalog[n.shard] == UINT32_MAX) {
          return Status::OK();
        }
        ++catalog_files;
        auto it = seen.find(key);
        bool ok = false;
        if (it != seen.end() && n.shard < shard_of_catalog.size() &&
            shard_of_catalog[n.shard] == it->second.first) {
          const ShardMember& m = *it->second.second;
          ok = m.data_offset == n.data_offset && m.size == n.size && m.crc32 == n.crc32;
        }
        if (!ok && mismatches++ < 20) {
          report.problems.push_back("catalog entry for " + QuoteKey(key) +
                                    " does not match the shards; run `" + refresh + "`");
        }
        return Status::OK();
      });
      if (!st.ok()) report.problems.push_back(st.message());
      if (mismatches > 20) {
        report.problems.push_back(std::to_string(mismatches - 20) + " more catalog entries differ");
      }
      if (catalog_files != report.members && mismatches == 0) {
        report.problems.push_back("catalog lists " + std::to_string(catalog_files) +
                                  " files but the shards hold " + std::to_string(report.members) +
                                  "; run `" + refresh + "`");
      }
    }
  }
  return report;
}

}  // namespace packfs
