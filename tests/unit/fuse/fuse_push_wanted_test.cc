// Pusher::Wanted: which inodes a read may push. One the kernel got from READDIRPLUS is wanted at
// once; one it got from a LOOKUP only after Pusher::kFreshLookups later lookups (by path its own
// reader is about to READ it); none once read (Served) or forgotten. No session is needed for
// these (the push thread only runs for jobs). A file a window takes is not wanted, and stops
// another window, until given back. InodeBits::TestAndSet, with which pushes claim a file once.
#include "fuse/push.h"

#include <gtest/gtest.h>

namespace packfs {
namespace {

constexpr uint64_t kMaxIno = 4000;

Pusher MakePusher(Stats& stats) {
  return Pusher(nullptr, kMaxIno, 256 * 1024, 1 << 20, stats, nullptr,
                [](uint64_t) { return uint64_t{100}; });
}

TEST(PusherWantedTest, AListedInodeIsWantedAtOnce) {
  Stats stats;
  Pusher pusher = MakePusher(stats);
  EXPECT_FALSE(pusher.Wanted(10));  // unknown to the kernel
  pusher.Known(10);
  EXPECT_TRUE(pusher.Wanted(10));
  pusher.Served(10, 1);  // read through a request: its bytes are in the kernel already
  EXPECT_FALSE(pusher.Wanted(10));
  pusher.Known(11);
  pusher.Forgotten(11);
  EXPECT_FALSE(pusher.Wanted(11));
}

TEST(PusherWantedTest, ALookedUpInodeIsWantedOnlyAfterTheNextLookups) {
  Stats stats;
  Pusher pusher = MakePusher(stats);
  pusher.LookedUp(10);
  EXPECT_FALSE(pusher.Wanted(10));  // in flight: its READ comes next
  for (uint64_t i = 0; i + 1 < Pusher::kFreshLookups; ++i) pusher.LookedUp(1000 + i);
  EXPECT_FALSE(pusher.Wanted(10)) << "still among the last kFreshLookups lookups";
  EXPECT_FALSE(pusher.Wanted(1000));
  pusher.LookedUp(2000);
  EXPECT_TRUE(pusher.Wanted(10)) << "looked up long before its read: pushed as after a scan";
  EXPECT_FALSE(pusher.Wanted(2000));
  // The ring keeps turning: every inode leaves it after kFreshLookups more lookups.
  for (uint64_t i = 0; i < Pusher::kFreshLookups; ++i) pusher.LookedUp(3000 + i);
  EXPECT_TRUE(pusher.Wanted(1000));
  EXPECT_TRUE(pusher.Wanted(2000));
  EXPECT_FALSE(pusher.Wanted(3000 + Pusher::kFreshLookups - 1));
  // A listing after the lookup does not make a fresh inode wanted: its reader is still on it.
  pusher.LookedUp(20);
  pusher.Known(20);
  EXPECT_FALSE(pusher.Wanted(20));
}

TEST(PusherWantedTest, AFileTakenForAWindowIsNotWantedUntilGivenBack) {
  Stats stats;
  Pusher pusher = MakePusher(stats);
  using Take = FollowerClaims::Take;
  EXPECT_EQ(pusher.TakeFollower(10), Take::kSkip);  // unknown to the kernel
  pusher.Known(10);
  pusher.Known(11);
  EXPECT_EQ(pusher.TakeFollower(10), Take::kTaken);
  EXPECT_FALSE(pusher.Wanted(10));
  // Another read's window meets it: what follows is the first read's to bring.
  EXPECT_EQ(pusher.TakeFollower(10), Take::kStop);
  EXPECT_EQ(stats.push_count(Stats::PushEvent::kCutShort), 1u);
  EXPECT_TRUE(pusher.Wanted(11));
  pusher.GiveBack(10);  // its window was not read after all
  EXPECT_TRUE(pusher.Wanted(10));
  EXPECT_EQ(pusher.TakeFollower(10), Take::kTaken);
  // Read through a request meanwhile: given back, it is still not wanted (the kernel has it).
  pusher.Served(10, 1);
  pusher.GiveBack(10);
  EXPECT_FALSE(pusher.Wanted(10));
  EXPECT_EQ(pusher.TakeFollower(10), Take::kSkip);
}

TEST(InodeBitsTest, TestAndSetTellsWhoTookABitFirst) {
  InodeBits bits(kMaxIno);
  EXPECT_FALSE(bits.TestAndSet(64));  // taken now
  EXPECT_TRUE(bits.TestAndSet(64));   // by someone before
  EXPECT_TRUE(bits.Test(64));
  EXPECT_FALSE(bits.Test(63));
  EXPECT_FALSE(bits.Test(65));
  EXPECT_TRUE(bits.TestAndClear(64));
  EXPECT_FALSE(bits.TestAndSet(64));
  EXPECT_FALSE(bits.TestAndSet(kMaxIno + 1));  // past the set: never held
  EXPECT_FALSE(bits.Test(kMaxIno + 1));
}

}  // namespace
}  // namespace packfs
