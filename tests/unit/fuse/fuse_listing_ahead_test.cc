// ListingAhead: a part is taken once and only for its directory and offset; a request for a part
// still being read waits for it (and reads the catalog itself when it is dropped); slots past
// kSlots go oldest read part first, and never while all of them are being read.
#include "fuse/listing_ahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace packfs {
namespace {

std::vector<DirEntry> Part(uint64_t from, size_t n) {
  std::vector<DirEntry> out;
  for (size_t i = 0; i < n; ++i) out.push_back(DirEntry{"f" + std::to_string(from + i), {}, 0});
  return out;
}

TEST(ListingAheadTest, APartIsTakenOnceForItsDirectoryAndOffset) {
  ListingAhead ahead;
  ASSERT_TRUE(ahead.Reserve(7, 390));
  EXPECT_FALSE(ahead.Reserve(7, 390));  // being read already
  ahead.Fill(7, 390, Part(390, 3));
  EXPECT_FALSE(ahead.Take(7, 391));
  EXPECT_FALSE(ahead.Take(8, 390));
  auto part = ahead.Take(7, 390);
  ASSERT_TRUE(part);
  ASSERT_EQ(part->size(), 3u);
  EXPECT_EQ((*part)[0].name, "f390");
  EXPECT_FALSE(ahead.Take(7, 390));
  EXPECT_EQ(ahead.Json(), "\"listing_ahead\": {\"kept\": 1, \"used\": 1}");
}

TEST(ListingAheadTest, ARequestWaitsForThePartBeingRead) {
  ListingAhead ahead;
  ASSERT_TRUE(ahead.Reserve(7, 390));
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ahead.Fill(7, 390, Part(390, 2));
  });
  auto part = ahead.Take(7, 390);
  reader.join();
  ASSERT_TRUE(part);
  EXPECT_EQ(part->size(), 2u);
}

TEST(ListingAheadTest, APartThatCouldNotBeReadIsDroppedAndItsWaiterReadsItself) {
  ListingAhead ahead;
  ASSERT_TRUE(ahead.Reserve(7, 390));
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ahead.Fill(7, 390, {});
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(ahead.Take(7, 390));
  reader.join();
  // Woken by the drop, not by the wait's end.
  EXPECT_LT(std::chrono::steady_clock::now() - t0,
            std::chrono::milliseconds(ListingAhead::kWaitMs));
  EXPECT_TRUE(ahead.Reserve(7, 390));  // the slot is free again
}

TEST(ListingAheadTest, TheOldestReadPartGoesFirstNeverOneBeingRead) {
  ListingAhead ahead;
  for (uint64_t dir = 1; dir <= ListingAhead::kSlots; ++dir) ASSERT_TRUE(ahead.Reserve(dir, 2));
  // Every slot is being read: nothing can go.
  EXPECT_FALSE(ahead.Reserve(100, 2));
  ahead.Fill(3, 2, Part(2, 1));
  ahead.Fill(5, 2, Part(2, 1));
  ASSERT_TRUE(ahead.Reserve(100, 2));  // replaces directory 3's, the older of the two read
  EXPECT_FALSE(ahead.Take(3, 2));
  EXPECT_TRUE(ahead.Take(5, 2));
}

}  // namespace
}  // namespace packfs
