// ShardPool: lazily opened, LRU-bounded shard files validated against the catalog (see header).
#include "core/read/shard_pool.h"

#include <sys/resource.h>

#include <algorithm>
#include <climits>

#include "core/read/shard_format.h"

namespace packfs {

// 24 bytes a shard (a set may have 100,000): opening locks and fingerprint verdicts live apart.
struct ShardPool::Slot {
  // Guarded by ShardPool::mu_.
  ShardLease src;
  std::list<uint32_t>::iterator lru_pos;
};

size_t DefaultMaxOpenShards() {
  struct rlimit rl;
  uint64_t soft = 1024;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) soft = rl.rlim_cur;
  if (soft > 1u << 20) soft = 1u << 20;
  uint64_t n = soft / 2 > 16 ? soft / 2 - 16 : 0;
  return static_cast<size_t>(std::max<uint64_t>(n, 4));
}

std::string ShardPaths::File(uint32_t shard) const {
  if (shard >= size()) return std::string();
  if (catalog_ == nullptr) return files_[shard];
  Result<const ShardInfo*> info = catalog_->Shard(shard);
  return info.ok() ? file_of_((*info)->name) : std::string();
}

std::string ShardPaths::Ref(uint32_t shard) const {
  if (shard >= size()) return std::string();
  if (catalog_ == nullptr) return refs_[shard];
  Result<const ShardInfo*> info = catalog_->Shard(shard);
  return ref_prefix_ + "/" + (info.ok() ? (*info)->name : "shard #" + std::to_string(shard));
}

ShardPool::ShardPool(const Catalog& catalog, const ShardPaths& paths, size_t max_open,
                     std::string refresh_hint, ShardOpener opener)
    : catalog_(catalog),
      paths_(paths),
      max_open_(std::max<size_t>(max_open, 1)),
      refresh_hint_(std::move(refresh_hint)),
      opener_(std::move(opener)),
      slots_(new Slot[catalog.shard_count()]) {}

ShardPool::~ShardPool() = default;

size_t ShardPool::open_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

Status ShardPool::Validate(uint32_t shard, const ShardInfo& want, const FileShardSource& src) {
  const FileStat& st = src.stat();
  const std::string name = paths_.Ref(shard);
  if (st.size != want.size) {
    return Status::Stale(name + " changed since the catalog was built (size is " +
                         std::to_string(st.size) + " bytes, the catalog says " +
                         std::to_string(want.size) + "); " + refresh_hint_);
  }
  if (st.mtime_ns == want.mtime_ns) return Status::OK();
  {
    std::lock_guard<std::mutex> lock(verdicts_mu_);
    auto it = verdicts_.find(shard);
    if (it != verdicts_.end() && it->second.size == st.size && it->second.mtime_ns == st.mtime_ns) {
      return it->second.status;
    }
  }
  Status verdict;
  Result<uint64_t> fp = ShardFingerprint(src, want.name);
  if (!fp.ok()) {
    verdict = Status::Stale(name + " changed since the catalog was built (" +
                            fp.status().message() + "); " + refresh_hint_);
  } else if (*fp != want.fingerprint) {
    verdict = Status::Stale(name +
                            " changed since the catalog was built (its central directory "
                            "differs); " + refresh_hint_);
  }
  std::lock_guard<std::mutex> lock(verdicts_mu_);
  verdicts_[shard] = Verdict{st.size, st.mtime_ns, verdict};
  return verdict;
}

void ShardPool::InsertLocked(Slot& slot, uint32_t shard, ShardLease src) {
  slot.src = std::move(src);
  lru_.push_front(shard);
  slot.lru_pos = lru_.begin();
  ++open_;
  while (open_ > max_open_) {
    // The least recently used shard nobody is reading; failing that, the least recently used.
    auto victim = std::prev(lru_.end());
    for (auto it = std::prev(lru_.end()); it != lru_.begin(); --it) {
      if (slots_[*it].src.use_count() == 1) {
        victim = it;
        break;
      }
    }
    if (victim == lru_.begin()) break;  // only the shard just opened is left
    slots_[*victim].src.reset();
    lru_.erase(victim);
    --open_;
  }
}

Result<ShardLease> ShardPool::Get(uint32_t shard) {
  if (shard >= catalog_.shard_count()) {
    return Status::Corruption("shard id " + std::to_string(shard) + " is not in the catalog (" +
                              std::to_string(catalog_.shard_count()) + " shards); " +
                              refresh_hint_);
  }
  Slot& slot = slots_[shard];
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot.src) {
      lru_.splice(lru_.begin(), lru_, slot.lru_pos);
      return slot.src;
    }
  }
  std::lock_guard<std::mutex> open_lock(open_mu_[shard % kOpenLocks]);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot.src) {  // another thread opened it while we waited
      lru_.splice(lru_.begin(), lru_, slot.lru_pos);
      return slot.src;
    }
  }
  // A catalog read in place may fetch the row now (a ranged GET of its block, once).
  PACKFS_ASSIGN_OR_RETURN(const ShardInfo* info, catalog_.Shard(shard));
  if (opener_) {
    const std::string path = paths_.File(shard), ref = paths_.Ref(shard);
    Result<ShardLease> opened = opener_(ShardToOpen{shard, *info, path, ref});
    if (!opened.ok()) return opened.status();
    std::lock_guard<std::mutex> lock(mu_);
    InsertLocked(slot, shard, *opened);
    return std::move(opened).value();
  }
  Result<std::unique_ptr<FileShardSource>> file =
      FileShardSource::Open(paths_.File(shard), paths_.Ref(shard));
  if (!file.ok()) {
    // A shard the catalog lists but that cannot be opened is a changed pack set: EIO, not the
    // ENOENT/EACCES a FUSE reply would otherwise pass to the reader of a listed file.
    return Status::Stale(file.status().message() + " (it changed since the catalog was built?); " +
                         refresh_hint_);
  }
  PACKFS_RETURN_IF_ERROR(Validate(shard, *info, **file));
  ShardLease lease(std::move(file).value());
  std::lock_guard<std::mutex> lock(mu_);
  InsertLocked(slot, shard, lease);
  return lease;
}

}  // namespace packfs
