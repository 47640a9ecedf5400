// BlockCache: LRU of byte extents with coalesced misses (see block_cache.h).
#include "core/block_cache.h"

namespace packfs {

struct BlockCache::Slot {
  std::string key;
  size_t reserved = 0;  // what Acquire reserved, released on Fulfill/Fail
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
  map_.emplace(slot->key, slot);
  bytes_ += size;
  pending_ += size;
  return Lookup{nullptr, slot, true};
}

bool BlockCache::Contains(const std::string& object, uint64_t start) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.count(KeyOf(object, start)) != 0;
}

void BlockCache::Fulfill(const std::shared_ptr<Slot>& slot, Bytes bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_ -= slot->reserved;
    pending_ -= slot->reserved;
    slot->reserved = 0;
    slot->bytes = std::move(bytes);
    slot->done = true;
    bytes_ += slot->bytes->size();
    lru_.push_front(slot);
    slot->lru = lru_.begin();
    slot->in_lru = true;
    EvictLocked();
  }
  done_.notify_all();
}

void BlockCache::Fail(const std::shared_ptr<Slot>& slot, const Status& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_ -= slot->reserved;
    pending_ -= slot->reserved;
    slot->reserved = 0;
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
  return bytes_;
}

uint64_t BlockCache::pending_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void BlockCache::EvictLocked() {
  while (bytes_ > capacity_ && !lru_.empty()) {
    std::shared_ptr<Slot> victim = lru_.back();
    lru_.pop_back();
    victim->in_lru = false;
    bytes_ -= victim->bytes->size();
    map_.erase(victim->key);
    victim->in_map = false;
    // Waiters that already hold the slot still get its bytes (slot->bytes stays set).
  }
}

}  // namespace packfs
