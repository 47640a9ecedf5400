// BlockCache: LRU of byte extents with coalesced misses, accounted by buffer (see block_cache.h).
#include "core/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

namespace packfs {

struct BlockCache::Slot {
  std::string key;
  size_t reserved = 0;  // what Acquire reserved and no Buffer covers yet
  size_t pending = 0;   // what Acquire reserved, until Fulfill/Fail
  size_t adopted = 0;   // bytes of an uncounted extent held here (counted in reserved_)
  bool done = false;
  bool in_map = true;
  Bytes bytes;
  Status error;
  std::list<std::shared_ptr<Slot>>::iterator lru;
  bool in_lru = false;
};

namespace {
std::string KeyOf(const std::string& object, uint64_t start) {
  std::string key = object;
  key.push_back('\0');
  key += std::to_string(start);
  return key;
}
}  // namespace

BlockCache::BlockCache(uint64_t capacity)
    : capacity_(capacity), live_(std::make_shared<std::atomic<uint64_t>>(0)) {}

BlockCache::Buffer::~Buffer() {
  // Uncount first: an eviction loop running right now sees the memory as gone.
  *live_ -= size_;
  ::munmap(data_, std::max<size_t>(size_, 1));
}

uint64_t BlockCache::BytesLocked() const { return reserved_ + live_->load(); }

BlockCache::Lookup BlockCache::Acquire(const std::string& object, uint64_t start, size_t size) {
  std::string key = KeyOf(object, start);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it != map_.end()) {
    const std::shared_ptr<Slot>& slot = it->second;
    if (slot->done) {
      lru_.splice(lru_.begin(), lru_, slot->lru);
      return Lookup{slot->bytes, nullptr, false};
    }
    return Lookup{nullptr, slot, false};
  }
  auto slot = std::make_shared<Slot>();
  slot->key = std::move(key);
  slot->reserved = size;
  slot->pending = size;
  map_.emplace(slot->key, slot);
  reserved_ += size;
  pending_ += size;
  EvictLocked();  // make room for the claim now, so held plus claimed stays within the bound
  peak_ = std::max(peak_, BytesLocked());
  return Lookup{nullptr, slot, true};
}

bool BlockCache::Contains(const std::string& object, uint64_t start) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.count(KeyOf(object, start)) != 0;
}

Result<std::shared_ptr<BlockCache::Buffer>> BlockCache::Allocate(
    size_t size, const std::vector<std::shared_ptr<Slot>>& claims) {
  // Its own mapping, not malloc: freed parts go straight back to the system instead of staying
  // in an arena as resident, reusable-only-by-malloc memory past the bound. Populated at once:
  // one call instead of a page fault per 4 KiB while the body arrives (faults are dear in VMs).
  void* p = ::mmap(nullptr, std::max<size_t>(size, 1), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    return Status::IOError("cannot map " + std::to_string(size) +
                           " bytes for a remote read (out of memory)", ENOMEM);
  }
  std::shared_ptr<Buffer> buf(new Buffer(static_cast<uint8_t*>(p), size, live_));
  std::lock_guard<std::mutex> lock(mu_);
  *live_ += size;
  for (const std::shared_ptr<Slot>& slot : claims) {
    reserved_ -= slot->reserved;
    slot->reserved = 0;
  }
  EvictLocked();
  peak_ = std::max(peak_, BytesLocked());
  return buf;
}

BlockCache::Bytes BlockCache::Slice(const std::shared_ptr<Buffer>& buffer, size_t offset,
                                    size_t size) {
  return Bytes(buffer, std::span<const uint8_t>(buffer->data() + offset, size), true);
}

void BlockCache::Fulfill(const std::shared_ptr<Slot>& slot, Bytes bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ -= slot->reserved;
    pending_ -= slot->pending;
    slot->reserved = 0;
    slot->pending = 0;
    if (!bytes.counted()) {
      slot->adopted = bytes->size();
      reserved_ += slot->adopted;
    }
    slot->bytes = std::move(bytes);
    slot->done = true;
    lru_.push_front(slot);
    slot->lru = lru_.begin();
    slot->in_lru = true;
    peak_ = std::max(peak_, BytesLocked());
    EvictLocked();
  }
  done_.notify_all();
}

void BlockCache::Fail(const std::shared_ptr<Slot>& slot, const Status& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ -= slot->reserved;
    pending_ -= slot->pending;
    slot->reserved = 0;
    slot->pending = 0;
    slot->error = error.ok() ? Status::IOError("block fetch abandoned") : error;
    slot->done = true;
    if (slot->in_map) {
      map_.erase(slot->key);
      slot->in_map = false;
    }
  }
  done_.notify_all();
}

Result<BlockCache::Bytes> BlockCache::Wait(const std::shared_ptr<Slot>& slot) const {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return slot->done; });
  if (slot->bytes) return slot->bytes;
  return slot->error;
}

uint64_t BlockCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return BytesLocked();
}

uint64_t BlockCache::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

uint64_t BlockCache::pending_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void BlockCache::EvictLocked() {
  // Evicting a slice of a part other slices still hold frees nothing yet; the loop goes on to
  // the next oldest, usually that part's next block, so parts leave the cache whole.
  while (BytesLocked() > capacity_ && !lru_.empty()) {
    std::shared_ptr<Slot> victim = lru_.back();
    lru_.pop_back();
    victim->in_lru = false;
    reserved_ -= victim->adopted;
    victim->adopted = 0;
    map_.erase(victim->key);
    victim->in_map = false;
    // Waiters that already hold the slot still get its bytes; otherwise they go with `victim`
    // (and a part's Buffer with its last slice, which uncounts it).
  }
}

}  // namespace packfs
