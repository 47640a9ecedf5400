// ShardPool: the open shard files of a pack set, opened lazily and bounded in number.
//
// A pack set may hold thousands of shards while a process may hold only RLIMIT_NOFILE fds, so at
// most `max_open` shards stay open; the least recently used one is closed when another must
// open (preferring shards no reader is using). A ShardLease (shared_ptr) keeps its fd open for
// the duration of a read even if the pool drops it meanwhile, so up to (max_open + concurrent
// readers) fds can exist at once. Every open — first or after eviction — compares the file's
// size and mtime with the catalog; an mtime-only difference (a copy without -t) is settled by the
// central-directory fingerprint, once per mtime. A mismatch fails with EIO and the refresh advice.
//
// Thread-safety: Get() is safe for concurrent use. The hit path is one mutex-protected list
// splice plus a shared_ptr copy; opening and fingerprinting run outside the pool mutex, under one
// of 64 opening mutexes (by shard id) so one shard is never opened twice at once.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/catalog/catalog.h"

namespace packfs {

// Where each shard of a set is (a file path or a URL) and what messages call it
// ("media/pack-0003.zip"): explicit lists (loose files, synthesized sources), or made from the
// catalog's shard names when asked (a pack directory, a remote set), so that a set of 100,000
// shards keeps no string per shard. Immutable; thread-safe.
class ShardPaths {
 public:
  ShardPaths(std::vector<std::string> files, std::vector<std::string> refs)
      : files_(std::move(files)), refs_(std::move(refs)) {}
  // The shards of `catalog` (which must outlive this) named by `file_of(name)` and
  // `ref_prefix + "/" + name`.
  ShardPaths(const Catalog& catalog,
             std::function<std::string(const std::string& name)> file_of, std::string ref_prefix)
      : catalog_(&catalog), file_of_(std::move(file_of)), ref_prefix_(std::move(ref_prefix)) {}

  size_t size() const { return catalog_ != nullptr ? catalog_->shard_count() : files_.size(); }
  // Empty for an id out of range, or a shard row that cannot be read.
  std::string File(uint32_t shard) const;
  // For messages: "<ref_prefix>/shard #<id>" when the row cannot be read.
  std::string Ref(uint32_t shard) const;

 private:
  std::vector<std::string> files_, refs_;
  const Catalog* catalog_ = nullptr;
  std::function<std::string(const std::string& name)> file_of_;
  std::string ref_prefix_;
};

// A shard an opener is asked to open: its id, as the catalog describes it, where it is (a file
// path or a URL) and what messages call it ("media/pack-0003.zip"). Valid during the call.
struct ShardToOpen {
  uint32_t id;
  const ShardInfo& info;
  const std::string& path;
  const std::string& ref;
};
// Opens a shard of a set whose shards are not the zip/tar files of a pack directory (loose files,
// synthesized content, remote objects); it validates what it opens itself. Thread-safe.
using ShardOpener = std::function<Result<ShardLease>(const ShardToOpen& shard)>;

// Half the soft RLIMIT_NOFILE minus a margin for other fds (FUSE, SQLite, stdio), at least 4.
size_t DefaultMaxOpenShards();

class ShardPool {
 public:
  // `catalog`'s shard rows describe what is expected; `paths.File(i)` opens shard i and
  // `paths.Ref(i)` names it in messages; `refresh_hint` ends stale messages
  // ("run `mkpack catalog media` to refresh it"). Both are the caller's and must outlive the
  // pool.
  ShardPool(const Catalog& catalog, const ShardPaths& paths, size_t max_open,
            std::string refresh_hint, ShardOpener opener = nullptr);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  Result<ShardLease> Get(uint32_t shard);

  size_t max_open() const { return max_open_; }
  // Shards the pool holds open now (excluding ones only kept alive by outstanding leases).
  size_t open_count() const;

 private:
  struct Slot;
  // The last file state the fingerprint check accepted or refused for a shard whose mtime is not
  // the catalog's, so a shard that keeps failing is not re-fingerprinted on every read.
  struct Verdict {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    Status status;
  };
  static constexpr size_t kOpenLocks = 64;
  Status Validate(uint32_t shard, const ShardInfo& want, const FileShardSource& src);
  void InsertLocked(Slot& slot, uint32_t shard, ShardLease src);

  const Catalog& catalog_;
  const ShardPaths& paths_;
  size_t max_open_;
  std::string refresh_hint_;
  ShardOpener opener_;  // empty: open paths_.File(i) and validate against the catalog's row
  std::unique_ptr<Slot[]> slots_;
  // Opening shard i holds open_mu_[i % kOpenLocks]: a shard is never opened twice at once.
  std::mutex open_mu_[kOpenLocks];
  std::mutex verdicts_mu_;
  std::unordered_map<uint32_t, Verdict> verdicts_;

  mutable std::mutex mu_;  // guards every Slot::src and lru position, lru_, open_
  std::list<uint32_t> lru_;  // open shards, most recently used first
  size_t open_ = 0;
};

}  // namespace packfs
