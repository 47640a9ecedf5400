// BlockCache: a byte-bounded in-memory LRU of immutable byte extents, keyed by (object, start),
// where concurrent misses of one key are coalesced: the first caller claims the key and fetches,
// the others wait for its result (one request, not N).
//
// Memory is accounted by the buffer, not by the extent: a fetch receives one part (several
// blocks) into one Buffer from Allocate, and its blocks are slices of it (Slice), so no byte is
// copied twice and a part's memory goes back to the system (it is its own mmap) when its last
// slice is dropped. bytes() is what claims reserve plus what live Buffers hold, whether the
// cache or a reader still refers to them; eviction goes on until that is within capacity(), so
// a part whose first blocks were evicted keeps counting until its last one goes too.
//
// Thread-safety: every method is safe for concurrent use (one mutex; waiters sleep on one
// condition variable). Extents share ownership of their memory: a reader holding one keeps its
// bytes alive after eviction (and counted). Claims count toward bytes() from Acquire until the
// Buffer that receives them is allocated (then the Buffer counts); callers keep what they claim
// at once well under capacity (RemoteReader claims at most half of it). A Buffer shares the
// counter it reports to, so an extent may outlive the cache.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/extent.h"
#include "core/base/status.h"

namespace packfs {

class BlockCache {
 public:
  using Bytes = Extent;
  struct Slot;  // one key's state; opaque to callers
  class Buffer;  // memory for one fetch; see Allocate

  // What Acquire found: the bytes (a hit), or a claim the caller must Fulfill or Fail (owner), or
  // another caller's claim to Wait for.
  struct Lookup {
    Bytes hit;
    std::shared_ptr<Slot> slot;
    bool owner = false;
  };

  // `spare_bytes` of the capacity are kept for the mappings of freed Buffers, which the next
  // Allocate of a fitting size reuses (touching fresh pages is dear in VMs; see Memory in the .cc):
  // live, claimed and spare bytes together stay within `capacity`.
  explicit BlockCache(uint64_t capacity, uint64_t spare_bytes = 0);
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // Looks `object`/`start` up; on a miss claims it, reserving `size` bytes.
  Lookup Acquire(const std::string& object, uint64_t start, size_t size);
  // True when the key is cached or claimed (no claim is made, the LRU order is untouched).
  bool Contains(const std::string& object, uint64_t start) const;
  // The cached extent, or null when the key is not cached (a claim still in flight counts as
  // not cached; nothing is claimed or waited for, the LRU order is untouched).
  Bytes Peek(const std::string& object, uint64_t start) const;
  // The first of start, start + step, ... that is neither cached nor claimed, or the first of
  // them at or past `end`: Contains over a run of keys under one lock (a sequential reader's
  // read-ahead window is hundreds of blocks, walked on every read).
  uint64_t CachedUntil(const std::string& object, uint64_t start, uint64_t end,
                       uint64_t step) const;
  // Makes a cached extent the next to be evicted. No effect on a claim or an unknown key.
  void Demote(const std::string& object, uint64_t start);
  // Removes a cached extent now (a sequential reader is done with it; readers holding its bytes
  // keep them). No effect on a claim or an unknown key.
  void Drop(const std::string& object, uint64_t start);
  // A writable buffer of `size` bytes (uninitialised) for the fetch of `claims` (slots this
  // caller owns, whose bytes the buffer will hold): from now on the buffer counts toward
  // bytes() instead of the claims' reservations, until its last slice is dropped. Evicts to make
  // room. Fails (IOError ENOMEM) only when the system has no memory to map.
  Result<std::shared_ptr<Buffer>> Allocate(size_t size,
                                           const std::vector<std::shared_ptr<Slot>>& claims);
  // The extent [offset, offset + size) of `buffer` (within it), sharing its ownership.
  static Bytes Slice(const std::shared_ptr<Buffer>& buffer, size_t offset, size_t size);
  // Completes a claim: the bytes become a hit for everyone; least recently used extents are
  // evicted until bytes() <= capacity() (claims in flight are never evicted).
  void Fulfill(const std::shared_ptr<Slot>& slot, Bytes bytes);
  // Abandons a claim: waiters get `error`, the key is forgotten (the next Acquire retries).
  void Fail(const std::shared_ptr<Slot>& slot, const Status& error);
  // Waits until another caller's claim completes; its bytes or its error.
  Result<Bytes> Wait(const std::shared_ptr<Slot>& slot) const;

  uint64_t capacity() const { return capacity_; }
  // Bytes reserved by claims plus bytes of live Buffers and adopted extents.
  uint64_t bytes() const;
  // The most bytes() ever was.
  uint64_t peak_bytes() const;
  // Bytes of claims not yet completed (their fetch may already have a Buffer).
  uint64_t pending_bytes() const;
  // Bytes of freed part mappings kept for reuse (within the spare room given at construction).
  uint64_t spare_bytes() const;

 private:
  void EvictLocked();
  // Takes a completed slot out of the map and the LRU (its bytes live on with their holders).
  void RemoveLocked(Slot& slot);
  uint64_t BytesLocked() const;

  const uint64_t capacity_;
  // Bytes of live Buffers and the spare mappings; shared with the Buffers, which may outlive the
  // cache.
  struct Memory;
  const std::shared_ptr<Memory> memory_;
  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  std::unordered_map<std::string, std::shared_ptr<Slot>> map_;  // key: object + '\0' + start
  std::list<std::shared_ptr<Slot>> lru_;                        // completed extents, newest first
  uint64_t reserved_ = 0;  // claims not yet covered by a Buffer, plus adopted (uncounted) extents
  uint64_t pending_ = 0;
  uint64_t peak_ = 0;
};

// Memory for one fetch: an anonymous mapping, uncounted when the last reference goes and then
// unmapped or kept as a spare for the next Buffer of its size. Thread-safe to read once filled; the fetching thread alone writes it, before slicing.
class BlockCache::Buffer {
 public:
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint8_t* data() { return data_; }
  size_t size() const { return size_; }

 private:
  friend class BlockCache;
  Buffer(uint8_t* data, size_t size, size_t mapped, std::shared_ptr<Memory> memory)
      : data_(data), size_(size), mapped_(mapped), memory_(std::move(memory)) {}
  uint8_t* data_;
  size_t size_;
  size_t mapped_;  // the mapping's length (a reused spare may be longer than size_)
  std::shared_ptr<Memory> memory_;
};

}  // namespace packfs
