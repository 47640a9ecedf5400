// Shard planning, pack directory state, and crash-safe shard writing (see pack_writer.h).
#include "core/write/pack_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>

#include "core/base/key.h"
#include "core/base/shard_source.h"
#include "core/format/zip_reader.h"

namespace packfs {
namespace {

// Prefetch sizing: small inputs are the ones whose open/read latency dominates; 64 MiB ahead
// keeps 2-16 readers busy on files of 4-32 KiB without holding much memory.
constexpr uint64_t kPrefetchSmallLimit = 4ull << 20;
constexpr uint64_t kPrefetchWindow = 64ull << 20;
constexpr size_t kStreamChunk = 1 << 20;

bool Fits(const ZipLayout& l, const PackOptions& o) {
  return l.FinishedSize() <= o.max_pack_bytes && l.count() <= o.max_members;
}

Status SyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) {
    int e = errno;
    return Status::IOError("cannot sync directory " + dir + ": " + ErrnoText(e), e);
  }
  return Status::OK();
}

// rename(2) that refuses to replace an existing shard.
Status RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return Status::OK();
  }
  int e = errno;
  if (e == EINVAL || e == ENOSYS) {  // filesystem without RENAME_NOREPLACE
    if (::access(to.c_str(), F_OK) == 0) e = EEXIST;
    else if (::rename(from.c_str(), to.c_str()) == 0) return Status::OK();
    else e = errno;
  }
  if (e == EEXIST) return Status::AlreadyExists("shard " + to + " appeared while writing; not replaced");
  return Status::IOError("cannot rename " + from + " to " + to + ": " + ErrnoText(e), e);
}

}  // namespace

ZipMemberSpec MemberSpec(const PackInput& in, const PackOptions& opts) {
  ZipMemberSpec s;
  s.name = in.key;
  s.size = in.size;
  s.mtime = opts.reproducible ? kReproducibleMtime : in.mtime;
  if (opts.align < 0) {
    s.align = in.size >= kDefaultAlignThreshold ? kDefaultAlign : 0;
  } else {
    s.align = static_cast<uint32_t>(opts.align);
  }
  return s;
}

std::string GroupKey(const std::string& key, GroupBy by) {
  if (by == GroupBy::kNone) return "";
  size_t slash = key.rfind('/');
  std::string dir = slash == std::string::npos ? "" : key.substr(0, slash);
  if (by == GroupBy::kDir) return dir;
  std::string base = slash == std::string::npos ? key : key.substr(slash + 1);
  size_t dot = base.find('.');
  return (dir.empty() ? "" : dir + "/") + base.substr(0, dot);
}

std::string GroupKey(const PackInput& in, GroupBy by) {
  return by == GroupBy::kInput ? in.group : GroupKey(in.key, by);
}

Result<PackPlan> PlanShards(const std::vector<PackInput>& inputs, const PackOptions& opts,
                            uint64_t first_index) {
  if (opts.align > 65535) {
    return Status::InvalidArgument("--align must be at most 65535 (got " +
                                   std::to_string(opts.align) + ")");
  }
  if (opts.max_members == 0) return Status::InvalidArgument("--max-members must be at least 1");
  // Groups in order of first appearance.
  std::vector<std::vector<size_t>> groups;
  std::vector<std::string> group_names;
  if (opts.group_by == GroupBy::kNone) {
    groups.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) groups.push_back({i});
  } else {
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string g = GroupKey(inputs[i], opts.group_by);
      auto [it, inserted] = index.emplace(g, groups.size());
      if (inserted) {
        groups.emplace_back();
        group_names.push_back(g);
      }
      groups[it->second].push_back(i);
    }
  }

  PackPlan plan;
  ZipLayout cur;
  PlannedShard shard;
  auto close_shard = [&] {
    if (shard.members.empty()) return;
    shard.index = first_index + plan.shards.size();
    shard.name = ShardFileName(shard.index);
    shard.bytes = cur.FinishedSize();
    plan.shard_bytes += shard.bytes;
    plan.shards.push_back(std::move(shard));
    shard = PlannedShard();
    cur = ZipLayout();
  };
  auto commit = [&](size_t i) {
    cur.Add(MemberSpec(inputs[i], opts));
    shard.members.push_back(i);
    shard.data_bytes += inputs[i].size;
    plan.data_bytes += inputs[i].size;
  };
  auto fits_with = [&](const std::vector<size_t>& members) {
    ZipLayout trial = cur;
    for (size_t i : members) trial.Add(MemberSpec(inputs[i], opts));
    return Fits(trial, opts);
  };

  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<size_t>& members = groups[g];
    if (!fits_with(members)) close_shard();  // roll over before the group, not inside it
    if (fits_with(members)) {
      for (size_t i : members) commit(i);
      continue;
    }
    // Larger than an empty shard: split it, member by member.
    if (members.size() > 1) {
      plan.split_groups.push_back(group_names[g].empty() ? "(top level)" : group_names[g]);
    }
    for (size_t i : members) {
      if (!fits_with({i})) close_shard();
      if (shard.members.empty() && !fits_with({i})) plan.oversized.push_back(inputs[i].key);
      commit(i);
    }
  }
  close_shard();
  return plan;
}

// ----------------------------------------------------------------------------------------------

std::string TempShardName(const std::string& shard_name) { return "." + shard_name + ".tmp"; }

Result<PackDirState> ScanPackDir(const std::string& dir) {
  PackDirState st;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    int e = errno;
    if (e == ENOENT) return st;
    return Status::IOError("cannot list pack directory " + dir + ": " + ErrnoText(e), e);
  }
  std::vector<std::pair<int64_t, std::string>> shards;
  while (struct dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    int64_t idx = ParseShardFileName(name);
    if (idx >= 0) {
      shards.emplace_back(idx, name);
      continue;
    }
    if (name.size() > 6 && name[0] == '.' && name.ends_with(".tmp") &&
        ParseShardFileName(name.substr(1, name.size() - 5)) >= 0) {
      st.temps.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(shards.begin(), shards.end());
  std::sort(st.temps.begin(), st.temps.end());
  for (auto& [idx, name] : shards) {
    st.shards.push_back(name);
    st.next_index = static_cast<uint64_t>(idx) + 1;
  }
  return st;
}

Status RemoveTemps(const std::string& dir, const PackDirState& state) {
  for (const std::string& t : state.temps) {
    std::string p = dir + "/" + t;
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      int e = errno;
      return Status::IOError("cannot remove leftover " + p + ": " + ErrnoText(e), e);
    }
  }
  return Status::OK();
}

Result<std::unordered_map<std::string, std::string>> ReadShardKeys(const std::string& dir,
                                                                  const PackDirState& state) {
  std::unordered_map<std::string, std::string> keys;
  for (const std::string& name : state.shards) {
    PACKFS_ASSIGN_OR_RETURN(auto src, FileShardSource::Open(dir + "/" + name, dir + "/" + name));
    PACKFS_ASSIGN_OR_RETURN(ShardIndex idx, ReadZipIndex(*src));
    for (ShardMember& m : idx.members) {
      auto [it, inserted] = keys.emplace(m.name, name);
      if (!inserted) {
        return Status::Corruption("key " + QuoteKey(m.name) + " is in both " + dir + "/" +
                                  it->second + " and " + dir + "/" + name);
      }
    }
  }
  return keys;
}

// ----------------------------------------------------------------------------------------------

namespace {

// Writes one shard's members through `w`. Reads come from the prefetcher when there is one.
bool Stopped(const PackOptions& opts) {
  return opts.stop != nullptr && opts.stop->load(std::memory_order_relaxed) != 0;
}

Status StoppedAt(const std::string& shard) {
  return Status::IOError("stopped while writing " + shard, EINTR);
}

Status WriteMembers(ZipWriter& w, const std::vector<PackInput>& inputs, const PlannedShard& ps,
                    const PackOptions& opts, Prefetcher* pre, size_t* seq,
                    InputBuffer* buf, WriteProgress* prog, const ProgressFn& progress) {
  for (size_t i : ps.members) {
    if (Stopped(opts)) return StoppedAt(ps.name);
    const PackInput& in = inputs[i];
    ZipMemberSpec spec = MemberSpec(in, opts);
    std::optional<Prefetcher::Item> item;
    if (pre != nullptr) item = pre->Take((*seq)++);
    if (item && item->prefetched) {
      PACKFS_RETURN_IF_ERROR(item->status);
      PACKFS_RETURN_IF_ERROR(w.AddMember(spec, item->data, item->crc));
      pre->Recycle(std::move(item->data));
    } else if (in.size <= kPrefetchSmallLimit) {
      uint32_t crc = 0;
      PACKFS_RETURN_IF_ERROR(ReadInput(in, buf, &crc));
      PACKFS_RETURN_IF_ERROR(w.AddMember(spec, *buf, crc));
    } else {
      PACKFS_ASSIGN_OR_RETURN(InputStream s, InputStream::Open(in));
      PACKFS_RETURN_IF_ERROR(w.BeginMember(spec));
      buf->resize(kStreamChunk);
      while (true) {
        if (Stopped(opts)) return StoppedAt(ps.name);
        PACKFS_ASSIGN_OR_RETURN(size_t n, s.Read(*buf));
        if (n == 0) break;
        PACKFS_RETURN_IF_ERROR(w.Append(std::span<const uint8_t>(buf->data(), n)));
      }
      PACKFS_RETURN_IF_ERROR(w.EndMember());
    }
    ++prog->files;
    prog->bytes += in.size;
    if (progress) progress(*prog);
  }
  return Status::OK();
}

}  // namespace

Status WriteShards(const std::string& dir, const std::vector<PackInput>& inputs,
                   const PackPlan& plan, const PackOptions& opts, const ProgressFn& progress) {
  return WriteShards(dir, inputs, plan, opts, progress, nullptr);
}

Status WriteShards(const std::string& dir, const std::vector<PackInput>& inputs,
                   const PackPlan& plan, const PackOptions& opts, const ProgressFn& progress,
                   std::vector<ShardContent>* written) {
  std::unique_ptr<Prefetcher> pre;
  if (opts.jobs > 1) {
    std::vector<size_t> order;
    for (const PlannedShard& ps : plan.shards) {
      order.insert(order.end(), ps.members.begin(), ps.members.end());
    }
    pre = std::make_unique<Prefetcher>(inputs, std::move(order), opts.jobs, kPrefetchSmallLimit,
                                       kPrefetchWindow);
  }
  size_t seq = 0;
  InputBuffer buf;
  WriteProgress prog;
  for (const PlannedShard& ps : plan.shards) {
    std::string final_path = dir + "/" + ps.name;
    std::string temp_path = dir + "/" + TempShardName(ps.name);
    PACKFS_ASSIGN_OR_RETURN(auto w, ZipWriter::Create(temp_path, final_path));
    Status st = WriteMembers(*w, inputs, ps, opts, pre.get(), &seq, &buf, &prog, progress);
    if (st.ok()) st = w->Finish(opts.sync);
    if (st.ok() && w->layout().FinishedSize() != ps.bytes) {
      st = Status::Corruption("internal error: " + final_path + " came out at " +
                              std::to_string(w->layout().FinishedSize()) + " bytes, planned " +
                              std::to_string(ps.bytes));
    }
    if (!st.ok()) {
      w.reset();
      if (st.err() == ENOSPC) {
        ::unlink(temp_path.c_str());
        return st.WithPrefix("no space left while writing " + final_path +
                             " (the partial shard was removed; complete shards remain)");
      }
      return st.WithPrefix("writing " + final_path + " stopped (left as " + temp_path +
                           "; run again with --resume to continue)");
    }
    PACKFS_RETURN_IF_ERROR(RenameNoReplace(temp_path, final_path));
    if (opts.sync) PACKFS_RETURN_IF_ERROR(SyncDir(dir));
    if (written != nullptr) {
      PACKFS_ASSIGN_OR_RETURN(FileStat fst, StatFile(final_path));
      ShardContent c;
      c.info.name = ps.name;
      c.info.size = fst.size;
      c.info.mtime_ns = fst.mtime_ns;
      c.index = w->index();
      c.info.fingerprint = c.index.fingerprint;
      written->push_back(std::move(c));
    }
    ++prog.shards;
    if (progress) progress(prog);
  }
  return Status::OK();
}

}  // namespace packfs
