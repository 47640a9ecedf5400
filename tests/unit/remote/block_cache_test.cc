// BlockCache accounting by buffer: blocks sliced from one part share its memory and are
// byte-exact; evicting some of a part's blocks keeps the part counted until its last block (or a
// reader's copy) is gone; claims count until a buffer covers them; failed claims and adopted
// vectors leave nothing behind; dropped and demoted extents, spare mappings, huge-page parts.
#include "core/remote/block_cache.h"

#include <gtest/gtest.h>

#include <cstring>

namespace packfs {
namespace {

constexpr size_t kBlock = 4096;

// Claims blocks `first`..`first + n - 1` of "o", fetches them as one part filled with bytes
// (block index * 7 + offset) % 251, and fulfills them with slices of it.
// `data`, when given, gets the part's buffer (to see which mapping it got).
void FetchPart(BlockCache& cache, uint64_t first, size_t n, const uint8_t** data = nullptr) {
  std::vector<std::shared_ptr<BlockCache::Slot>> slots;
  for (size_t i = 0; i < n; ++i) {
    BlockCache::Lookup l = cache.Acquire("o", (first + i) * kBlock, kBlock);
    ASSERT_TRUE(l.owner);
    slots.push_back(l.slot);
  }
  auto buf = cache.Allocate(n * kBlock, slots);
  ASSERT_TRUE(buf.ok()) << buf.status().ToString();
  if (data) *data = (*buf)->data();
  for (size_t i = 0; i < n * kBlock; ++i) {
    (*buf)->data()[i] = static_cast<uint8_t>(((first + i / kBlock) * 7 + i % kBlock) % 251);
  }
  for (size_t i = 0; i < n; ++i) {
    cache.Fulfill(slots[i], BlockCache::Slice(*buf, i * kBlock, kBlock));
  }
}

void ExpectBlock(const BlockCache::Bytes& b, uint64_t block) {
  ASSERT_TRUE(b);
  ASSERT_EQ(b->size(), kBlock);
  for (size_t i = 0; i < kBlock; ++i) {
    ASSERT_EQ((*b)[i], static_cast<uint8_t>((block * 7 + i) % 251))
        << "block " << block << " at " << i;
  }
}

TEST(BlockCacheTest, SlicesOfAPartAreExactAndShareItsMemory) {
  BlockCache cache(16 * kBlock);
  FetchPart(cache, 0, 4);
  EXPECT_EQ(cache.bytes(), 4 * kBlock);
  EXPECT_EQ(cache.pending_bytes(), 0u);
  const void* owner = nullptr;
  for (uint64_t b = 0; b < 4; ++b) {
    BlockCache::Lookup l = cache.Acquire("o", b * kBlock, kBlock);
    ExpectBlock(l.hit, b);
    if (b == 0) owner = l.hit.owner();
    EXPECT_EQ(l.hit.owner(), owner);  // one buffer, no copies
    EXPECT_EQ(l.hit->data(), (*cache.Acquire("o", 0, kBlock).hit).data() + b * kBlock);
  }
}

TEST(BlockCacheTest, APartCountsUntilItsLastBlockIsEvicted) {
  BlockCache cache(4 * kBlock);
  FetchPart(cache, 0, 2);  // part A: blocks 0, 1
  FetchPart(cache, 2, 2);  // part B: blocks 2, 3
  EXPECT_EQ(cache.bytes(), 4 * kBlock);
  // LRU, oldest first: 1, 2, 3, 0.
  ExpectBlock(cache.Acquire("o", 0, kBlock).hit, 0);
  // A claim for block 4 needs one block of room: evicting block 1 frees nothing (block 0 still
  // holds part A), so eviction goes on through part B, which then goes back whole.
  BlockCache::Lookup c = cache.Acquire("o", 4 * kBlock, kBlock);
  ASSERT_TRUE(c.owner);
  EXPECT_FALSE(cache.Contains("o", 1 * kBlock));
  EXPECT_FALSE(cache.Contains("o", 2 * kBlock));
  EXPECT_FALSE(cache.Contains("o", 3 * kBlock));
  EXPECT_TRUE(cache.Contains("o", 0));
  EXPECT_EQ(cache.bytes(), 2 * kBlock + kBlock);  // part A whole, plus the claim
  EXPECT_LE(cache.peak_bytes(), 4 * kBlock + kBlock);
  // The surviving half of part A is still exact.
  BlockCache::Bytes held = cache.Acquire("o", 0, kBlock).hit;
  ExpectBlock(held, 0);
  cache.Fail(c.slot, Status::IOError("test"));
  EXPECT_EQ(cache.bytes(), 2 * kBlock);
  // Part C (blocks 10, 11) fills the cache; a claim then evicts block 0, but the reader holding
  // it keeps part A alive and counted, so part C has to go as well.
  FetchPart(cache, 10, 2);
  EXPECT_EQ(cache.bytes(), 4 * kBlock);
  BlockCache::Lookup d = cache.Acquire("o", 12 * kBlock, kBlock);
  ASSERT_TRUE(d.owner);
  EXPECT_FALSE(cache.Contains("o", 0));
  EXPECT_FALSE(cache.Contains("o", 10 * kBlock));
  EXPECT_EQ(cache.bytes(), 2 * kBlock + kBlock);
  ExpectBlock(held, 0);
  held = nullptr;  // the last reference to part A
  EXPECT_EQ(cache.bytes(), kBlock);
  EXPECT_EQ(cache.peak_bytes(), 4 * kBlock);
  cache.Fail(d.slot, Status::IOError("test"));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(BlockCacheTest, ClaimsCountUntilCoveredAndFailedOnesLeaveNothing) {
  BlockCache cache(64 * kBlock);
  std::vector<std::shared_ptr<BlockCache::Slot>> slots;
  for (uint64_t b = 0; b < 3; ++b) slots.push_back(cache.Acquire("o", b * kBlock, kBlock).slot);
  EXPECT_EQ(cache.bytes(), 3 * kBlock);
  EXPECT_EQ(cache.pending_bytes(), 3 * kBlock);
  {
    auto buf = cache.Allocate(3 * kBlock, slots);
    ASSERT_TRUE(buf.ok());
    EXPECT_EQ(cache.bytes(), 3 * kBlock);          // the buffer replaced the reservations
    EXPECT_EQ(cache.pending_bytes(), 3 * kBlock);  // still in flight
    for (auto& s : slots) cache.Fail(s, Status::IOError("server went away"));
    EXPECT_EQ(cache.bytes(), 3 * kBlock);  // the buffer is still here
  }
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.pending_bytes(), 0u);
  EXPECT_FALSE(cache.Contains("o", 0));
  // A vector of its own (as a disk cache hands over) counts while cached.
  BlockCache::Lookup l = cache.Acquire("o", 0, kBlock);
  cache.Fulfill(l.slot, std::make_shared<const std::vector<uint8_t>>(kBlock, uint8_t{9}));
  EXPECT_EQ(cache.bytes(), kBlock);
  BlockCache::Bytes hit = cache.Acquire("o", 0, kBlock).hit;
  ASSERT_TRUE(hit);
  EXPECT_EQ((*hit)[kBlock - 1], 9);
  EXPECT_FALSE(hit.counted());
}

// Freed parts' mappings are reused by later parts that fit (fresh pages are dear to touch in
// VMs), within the room the cache keeps for them: data plus spares stay within the capacity.
TEST(BlockCacheTest, FreedPartsAreReusedWithinTheCapacity) {
  BlockCache cache(8 * kBlock, 2 * kBlock);  // room for 6 blocks of data and 2 of spares
  const uint8_t* a = nullptr;
  const uint8_t* b = nullptr;
  const uint8_t* d = nullptr;
  FetchPart(cache, 0, 2, &a);
  FetchPart(cache, 2, 2, &b);
  FetchPart(cache, 4, 2);
  EXPECT_EQ(cache.bytes(), 6 * kBlock);
  // Part D's claims evict part A (the oldest), whose mapping becomes the spare D then gets.
  FetchPart(cache, 6, 2, &d);
  EXPECT_FALSE(cache.Contains("o", 0));
  EXPECT_EQ(d, a);
  ExpectBlock(cache.Acquire("o", 6 * kBlock, kBlock).hit, 6);
  EXPECT_LE(cache.peak_bytes() + 2 * kBlock, 8 * kBlock);
  // A one-block part evicts part B and gets its two-block mapping (it fits, at most twice its
  // size), with its own bytes.
  const uint8_t* e = nullptr;
  FetchPart(cache, 20, 1, &e);
  EXPECT_FALSE(cache.Contains("o", 2 * kBlock));
  EXPECT_EQ(e, b);
  ExpectBlock(cache.Acquire("o", 20 * kBlock, kBlock).hit, 20);
  // A part bigger than any spare gets a new mapping.
  const uint8_t* f = nullptr;
  FetchPart(cache, 30, 3, &f);
  EXPECT_NE(f, a);
  EXPECT_NE(f, b);
  ExpectBlock(cache.Acquire("o", 30 * kBlock, kBlock).hit, 30);
  EXPECT_LE(cache.peak_bytes() + 2 * kBlock, 8 * kBlock);
}

// What a sequential reader has passed is dropped at once (its part's mapping becomes a spare as
// soon as no reader holds it) or demoted to be evicted first; neither touches a claim.
TEST(BlockCacheTest, DroppedExtentsGoNowAndDemotedOnesGoFirst) {
  BlockCache cache(16 * kBlock, 4 * kBlock);
  const uint8_t* a = nullptr;
  FetchPart(cache, 0, 2, &a);
  FetchPart(cache, 2, 2);
  BlockCache::Bytes held = cache.Acquire("o", 0, kBlock).hit;
  cache.Drop("o", 0);
  cache.Drop("o", kBlock);
  EXPECT_FALSE(cache.Contains("o", 0));
  EXPECT_FALSE(cache.Contains("o", kBlock));
  EXPECT_TRUE(cache.Contains("o", 2 * kBlock));
  EXPECT_EQ(cache.bytes(), 4 * kBlock);  // the reader's hold keeps part A counted
  EXPECT_EQ(cache.spare_bytes(), 0u);
  ExpectBlock(held, 0);
  held = nullptr;
  EXPECT_EQ(cache.bytes(), 2 * kBlock);
  EXPECT_EQ(cache.spare_bytes(), 2 * kBlock);
  const uint8_t* c = nullptr;
  FetchPart(cache, 8, 2, &c);  // same size: gets part A's mapping
  EXPECT_EQ(c, a);
  EXPECT_EQ(cache.spare_bytes(), 0u);
  ExpectBlock(cache.Acquire("o", 8 * kBlock, kBlock).hit, 8);
  // A dropped key is a miss again; dropping or demoting a claim in flight does nothing.
  BlockCache::Lookup claim = cache.Acquire("o", 0, kBlock);
  ASSERT_TRUE(claim.owner);
  cache.Drop("o", 0);
  cache.Demote("o", 0);
  EXPECT_TRUE(cache.Contains("o", 0));
  cache.Fail(claim.slot, Status::IOError("test"));

  // Demote: with room for 4 one-block extents (LRU oldest first: 20, 21, 22, 23), demoting 23
  // makes it the one a new claim evicts.
  BlockCache small(4 * kBlock);
  for (uint64_t b = 20; b < 24; ++b) FetchPart(small, b, 1);
  small.Demote("o", 23 * kBlock);
  BlockCache::Lookup d = small.Acquire("o", 24 * kBlock, kBlock);
  ASSERT_TRUE(d.owner);
  EXPECT_FALSE(small.Contains("o", 23 * kBlock));
  for (uint64_t b = 20; b < 23; ++b) EXPECT_TRUE(small.Contains("o", b * kBlock)) << b;
  small.Fail(d.slot, Status::IOError("test"));
}

// The spare room keeps the most recently freed mappings (the sizes a running sequential read
// asks for next), giving up older ones to make room.
TEST(BlockCacheTest, SparesKeepTheNewestMappings) {
  BlockCache cache(16 * kBlock, 2 * kBlock);
  FetchPart(cache, 0, 1);
  FetchPart(cache, 1, 2);
  cache.Drop("o", 0);
  EXPECT_EQ(cache.spare_bytes(), kBlock);
  cache.Drop("o", 1 * kBlock);
  cache.Drop("o", 2 * kBlock);
  EXPECT_EQ(cache.spare_bytes(), 2 * kBlock);  // the two-block mapping, not the older one
  const uint8_t* c = nullptr;
  FetchPart(cache, 10, 2, &c);
  EXPECT_EQ(cache.spare_bytes(), 0u);
  ExpectBlock(cache.Acquire("o", 11 * kBlock, kBlock).hit, 11);
}

// Parts of 2 MiB and more are whole, aligned 2 MiB pages (for transparent huge pages), and the
// rounding counts toward the bound.
TEST(BlockCacheTest, LargePartsAreWholeAlignedHugePages) {
  constexpr uint64_t kHuge = 2 << 20;
  BlockCache cache(64 << 20);
  const uint8_t* data = nullptr;
  FetchPart(cache, 0, kHuge / kBlock + 1, &data);  // 2 MiB + 4 KiB
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHuge, 0u);
  EXPECT_EQ(cache.bytes(), 2 * kHuge);
  ExpectBlock(cache.Acquire("o", 0, kBlock).hit, 0);
  ExpectBlock(cache.Acquire("o", kHuge, kBlock).hit, kHuge / kBlock);
}

TEST(BlockCacheTest, CachedUntilFindsTheFirstKeyNeitherCachedNorClaimed) {
  BlockCache cache(16 * kBlock);
  FetchPart(cache, 2, 3);                                           // blocks 2, 3, 4 cached
  BlockCache::Lookup claim = cache.Acquire("o", 5 * kBlock, kBlock);  // block 5 claimed
  ASSERT_TRUE(claim.owner);
  EXPECT_EQ(cache.CachedUntil("o", 2 * kBlock, 10 * kBlock, kBlock), 6 * kBlock);
  EXPECT_EQ(cache.CachedUntil("o", 0, 10 * kBlock, kBlock), 0u);
  // All of a run cached: the first key at or past its end.
  EXPECT_EQ(cache.CachedUntil("o", 2 * kBlock, 4 * kBlock + 1, kBlock), 5 * kBlock);
  EXPECT_EQ(cache.CachedUntil("o", 2 * kBlock, 2 * kBlock, kBlock), 2 * kBlock);
  // Another object's keys are other keys.
  EXPECT_EQ(cache.CachedUntil("p", 2 * kBlock, 10 * kBlock, kBlock), 2 * kBlock);
  cache.Fail(claim.slot, Status::IOError("test"));
  EXPECT_EQ(cache.CachedUntil("o", 2 * kBlock, 10 * kBlock, kBlock), 5 * kBlock);
}

}  // namespace
}  // namespace packfs
