// BlockCache: LRU of byte extents with coalesced misses, accounted by buffer (see block_cache.h).
#include "core/remote/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "core/base/wait_notice.h"

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

// Mappings of freed Buffers, kept for the next Buffer of the same size. On these VMs touching a
// freshly mapped page costs about 15 us (MAP_POPULATE included): 256 MiB through new 1 MiB
// mappings took 1.0-1.4 s of memcpy, through a reused one 0.016 s, and a sequential remote read
// spent half its time there. The cache keeps room for them (spare_limit, which RemoteReader sets
// to 1/8 of its capacity: eight 1 MiB parts at 64M).
struct BlockCache::Memory {
  explicit Memory(uint64_t spare_limit) : spare_limit(spare_limit) {}
  ~Memory() {
    for (const auto& [p, n] : spares) ::munmap(p, n);
  }
  std::atomic<uint64_t> live{0};
  const uint64_t spare_limit;
  std::mutex mu;
  std::vector<std::pair<uint8_t*, size_t>> spares;  // most recently freed last
  uint64_t spare_bytes = 0;
};

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// A new populated mapping of at least `size` bytes (`size` becomes what was mapped), or
// MAP_FAILED. Parts of 2 MiB and more are rounded up to whole 2 MiB pages and backed by
// transparent huge pages where the kernel allows: populating 256 MiB that way took 0.08 s here
// against 1.0-1.4 s in 4 KiB pages, and a sequential read's parts are that large.
void* MapPart(size_t& size) {
  if (size < kHugePage) {
    return ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  }
  size = (size + kHugePage - 1) / kHugePage * kHugePage;
  // Over-map by one huge page, then trim to a 2 MiB aligned start.
  void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(raw, aligned - start);
  const size_t tail = kHugePage - (aligned - start);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  void* p = reinterpret_cast<void*>(aligned);
  (void)::madvise(p, size, MADV_HUGEPAGE);  // only advice: without THP, 4 KiB pages
  if (::madvise(p, size, MADV_POPULATE_WRITE) != 0) {
    // Kernels before 5.14: one write per page instead.
    for (size_t i = 0; i < size; i += 4096) static_cast<volatile uint8_t*>(p)[i] = 0;
  }
  return p;
}

// A block's key: the object's name, a NUL, then the block's start in decimal. KeyPrefix is the
// part before the number; SetStart writes the number after it.
std::string KeyPrefix(const std::string& object) {
  std::string key = object;
  key.push_back('\0');
  return key;
}
void SetStart(std::string& key, size_t prefix, uint64_t start) {
  key.resize(prefix);
  key += std::to_string(start);
}
std::string KeyOf(const std::string& object, uint64_t start) {
  std::string key = KeyPrefix(object);
  SetStart(key, key.size(), start);
  return key;
}
}  // namespace

BlockCache::BlockCache(uint64_t capacity, uint64_t spare_bytes)
    : capacity_(capacity), memory_(std::make_shared<Memory>(std::min(spare_bytes, capacity))) {}

BlockCache::Buffer::~Buffer() {
  // Uncount first: an eviction loop running right now sees the memory as gone.
  memory_->live -= mapped_;
  // The newest spares are kept: the sizes just freed are the likeliest to be asked for next (a
  // sequential read's parts), while the odd sizes of a window's growth would otherwise sit in
  // the pool for good.
  std::vector<std::pair<uint8_t*, size_t>> unmap;
  if (mapped_ > memory_->spare_limit) {
    unmap.emplace_back(data_, mapped_);
  } else {
    std::lock_guard<std::mutex> lock(memory_->mu);
    auto& spares = memory_->spares;
    size_t drop = 0;
    while (memory_->spare_bytes + mapped_ > memory_->spare_limit) {
      unmap.push_back(spares[drop]);
      memory_->spare_bytes -= spares[drop].second;
      ++drop;
    }
    spares.erase(spares.begin(), spares.begin() + static_cast<ptrdiff_t>(drop));
    spares.emplace_back(data_, mapped_);
    memory_->spare_bytes += mapped_;
  }
  for (const auto& [p, n] : unmap) ::munmap(p, n);
}

uint64_t BlockCache::BytesLocked() const { return reserved_ + memory_->live.load(); }

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

BlockCache::Bytes BlockCache::Peek(const std::string& object, uint64_t start) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(KeyOf(object, start));
  if (it == map_.end() || !it->second->done || !it->second->error.ok()) return Bytes();
  return it->second->bytes;
}

uint64_t BlockCache::CachedUntil(const std::string& object, uint64_t start, uint64_t end,
                                 uint64_t step) const {
  // One key, its number rewritten in place for each block.
  std::string key = KeyPrefix(object);
  const size_t prefix = key.size();
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t at = start;
  for (; at < end; at += step) {
    SetStart(key, prefix, at);
    if (map_.count(key) == 0) break;
  }
  return at;
}

void BlockCache::Demote(const std::string& object, uint64_t start) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(KeyOf(object, start));
  if (it == map_.end() || !it->second->in_lru) return;
  lru_.splice(lru_.end(), lru_, it->second->lru);
}

void BlockCache::Drop(const std::string& object, uint64_t start) {
  std::shared_ptr<Slot> victim;  // released after the lock: it may free a part
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(KeyOf(object, start));
  if (it == map_.end() || !it->second->in_lru) return;
  victim = it->second;
  RemoveLocked(*victim);
}

Result<std::shared_ptr<BlockCache::Buffer>> BlockCache::Allocate(
    size_t size, const std::vector<std::shared_ptr<Slot>>& claims) {
  // Its own mapping, not malloc: freed parts go back to the system (but for a few spares, see
  // Memory) instead of staying in an arena as resident memory past the bound. Populated at once:
  // one call instead of a page fault per 4 KiB while the body arrives (faults are dear in VMs).
  // The smallest spare that fits and is at most twice the size (runs of blocks vary in length).
  void* p = MAP_FAILED;
  size_t mapped = std::max<size_t>(size, 1);
  {
    std::lock_guard<std::mutex> lock(memory_->mu);
    auto& spares = memory_->spares;
    size_t best = spares.size();
    for (size_t i = 0; i < spares.size(); ++i) {
      if (spares[i].second >= mapped && spares[i].second <= 2 * mapped &&
          (best == spares.size() || spares[i].second < spares[best].second)) {
        best = i;
      }
    }
    if (best < spares.size()) {
      p = spares[best].first;
      mapped = spares[best].second;
      memory_->spare_bytes -= mapped;
      spares.erase(spares.begin() + static_cast<ptrdiff_t>(best));
    }
  }
  if (p == MAP_FAILED) p = MapPart(mapped);
  if (p == MAP_FAILED) {
    return Status::IOError("cannot map " + std::to_string(size) +
                           " bytes for a remote read (out of memory)", ENOMEM);
  }
  std::shared_ptr<Buffer> buf(new Buffer(static_cast<uint8_t*>(p), size, mapped, memory_));
  std::lock_guard<std::mutex> lock(mu_);
  memory_->live += mapped;
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
  if (!slot->done) {
    // The block is still on its way: a FUSE worker steps aside before waiting for it.
    if (WaitNotice* notice = CurrentWaitNotice()) {
      lock.unlock();
      notice->BeforeWait();
      lock.lock();
    }
  }
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

void BlockCache::RemoveLocked(Slot& slot) {
  lru_.erase(slot.lru);
  slot.in_lru = false;
  reserved_ -= slot.adopted;
  slot.adopted = 0;
  map_.erase(slot.key);
  slot.in_map = false;
}

uint64_t BlockCache::spare_bytes() const {
  std::lock_guard<std::mutex> lock(memory_->mu);
  return memory_->spare_bytes;
}

void BlockCache::EvictLocked() {
  // Evicting a slice of a part other slices still hold frees nothing yet; the loop goes on to
  // the next oldest, usually that part's next block, so parts leave the cache whole.
  while (BytesLocked() + memory_->spare_limit > capacity_ && !lru_.empty()) {
    std::shared_ptr<Slot> victim = lru_.back();
    RemoveLocked(*victim);
    // Waiters that already hold the slot still get its bytes; otherwise they go with `victim`
    // (and a part's Buffer with its last slice, which uncounts it).
  }
}

}  // namespace packfs
