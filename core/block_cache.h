// BlockCache: a byte-bounded in-memory LRU of immutable byte extents, keyed by (object, start),
// where concurrent misses of one key are coalesced: the first caller claims the key and fetches,
// the others wait for its result (one request, not N).
//
// Thread-safety: every method is safe for concurrent use (one mutex; waiters sleep on one
// condition variable). Extents are shared_ptr<const vector>: a reader holding one keeps its bytes
// alive after eviction, so memory exceeds capacity() only by what readers are copying right now.
// Claimed (pending) extents count toward bytes() from the moment they are claimed; callers keep
// what they claim at once well under capacity (RemoteReader claims at most half of it).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace packfs {

class BlockCache {
 public:
  using Bytes = std::shared_ptr<const std::vector<uint8_t>>;
  struct Slot;  // one key's state; opaque to callers

  // What Acquire found: the bytes (a hit), or a claim the caller must Fulfill or Fail (owner), or
  // another caller's claim to Wait for.
  struct Lookup {
    Bytes hit;
    std::shared_ptr<Slot> slot;
    bool owner = false;
  };

  explicit BlockCache(uint64_t capacity) : capacity_(capacity) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // Looks `object`/`start` up; on a miss claims it, reserving `size` bytes.
  Lookup Acquire(const std::string& object, uint64_t start, size_t size);
  // True when the key is cached or claimed (no claim is made, the LRU order is untouched).
  bool Contains(const std::string& object, uint64_t start) const;
  // Completes a claim: the bytes become a hit for everyone; least recently used extents are
  // evicted until bytes() <= capacity() (claims in flight are never evicted).
  void Fulfill(const std::shared_ptr<Slot>& slot, Bytes bytes);
  // Abandons a claim: waiters get `error`, the key is forgotten (the next Acquire retries).
  void Fail(const std::shared_ptr<Slot>& slot, const Status& error);
  // Waits until another caller's claim completes; its bytes or its error.
  Result<Bytes> Wait(const std::shared_ptr<Slot>& slot) const;

  uint64_t capacity() const { return capacity_; }
  // Bytes held or reserved by claims.
  uint64_t bytes() const;
  // Bytes reserved by claims not yet completed.
  uint64_t pending_bytes() const;

 private:
  void EvictLocked();

  const uint64_t capacity_;
  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  std::unordered_map<std::string, std::shared_ptr<Slot>> map_;  // key: object + '\0' + start
  std::list<std::shared_ptr<Slot>> lru_;                        // completed extents, newest first
  uint64_t bytes_ = 0;
  uint64_t pending_ = 0;
};

}  // namespace packfs
