// Pusher::MayPushInto: once a directory is past its first 15% (Pusher::kPushAfterPercent) reads
// may push into it, unless the walk found no room in memory for it (twice its bytes and
// Pusher::kWalkReserve); then reads stop pushing there too, and the directory's readiness for
// a lookup's hint (DirReady) is unchanged. No session is needed: the walk pushes only files the
// kernel holds, and none is known here.
#include "fuse/push.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

namespace packfs {
namespace {

constexpr uint64_t kMaxIno = 4000;
constexpr uint64_t kDir = 1;
constexpr uint64_t kChildren = 100;
constexpr uint64_t kDirBytes = 8 << 20;

// A pusher whose walk sees `room` bytes of memory left, over a directory kDir of kChildren
// local files (inodes 2..101) holding kDirBytes.
std::unique_ptr<Pusher> MakePusher(Stats& stats, uint64_t room) {
  auto pusher = std::make_unique<Pusher>(nullptr, kMaxIno, 256 * 1024, 1 << 20, stats, nullptr,
                                         [](uint64_t) { return kChildren; });
  pusher->StartWalks(
      [](uint64_t) {
        return Filesystem::ChildSpan{kDir + 1, kChildren, kDirBytes, true};
      },
      [](uint64_t, Pusher::Job*) { return false; },
      [room] { return std::optional<uint64_t>(room); });
  return pusher;
}

// Serves the first 15% of kDir, which makes it ready and hands it to the walk.
void MakeReady(Pusher& pusher) {
  for (uint64_t i = 0; i < kChildren * Pusher::kPushAfterPercent / 100; ++i) {
    EXPECT_FALSE(pusher.MayPushInto(kDir)) << "before the directory is ready, file " << i;
    pusher.Served(kDir + 1 + i, kDir);
  }
  EXPECT_TRUE(pusher.DirReady(kDir));
}

// Waits (up to 5 s) until the walk has taken kDir: walked, or refused for want of room (counted
// after its mark, so MayPushInto tells it once counted).
void WaitForWalk(const Stats& stats) {
  for (int i = 0; i < 500; ++i) {
    if (stats.push_count(Stats::PushEvent::kWalk) + stats.push_count(Stats::PushEvent::kWalkNoRoom))
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "the walk never took the ready directory";
}

TEST(PusherRoomTest, WithRoomReadsPushIntoAReadyDirectory) {
  Stats stats;
  auto pusher = MakePusher(stats, 2 * kDirBytes + Pusher::kWalkReserve);
  MakeReady(*pusher);
  WaitForWalk(stats);
  EXPECT_EQ(stats.push_count(Stats::PushEvent::kWalk), 1u);
  EXPECT_TRUE(pusher->MayPushInto(kDir));
  EXPECT_FALSE(pusher->MayPushInto(kDir + 1000)) << "another directory, not ready";
}

TEST(PusherRoomTest, WithoutRoomReadsStopPushingIntoIt) {
  Stats stats;
  auto pusher = MakePusher(stats, 2 * kDirBytes + Pusher::kWalkReserve - 1);
  MakeReady(*pusher);
  WaitForWalk(stats);
  EXPECT_EQ(stats.push_count(Stats::PushEvent::kWalkNoRoom), 1u);
  EXPECT_EQ(stats.push_count(Stats::PushEvent::kWalk), 0u);
  EXPECT_FALSE(pusher->MayPushInto(kDir));
  EXPECT_TRUE(pusher->DirReady(kDir)) << "still read through: a lookup's hint still widens";
  pusher->Served(kDir + 50, kDir);  // more reads do not bring pushing back
  EXPECT_FALSE(pusher->MayPushInto(kDir));
}

TEST(PusherRoomTest, WithoutAWalkReadsPushOnceReady) {
  Stats stats;
  Pusher pusher(nullptr, kMaxIno, 256 * 1024, 1 << 20, stats, nullptr,
                [](uint64_t) { return kChildren; });
  MakeReady(pusher);
  EXPECT_TRUE(pusher.MayPushInto(kDir)) << "-o nowalk: nothing judges the room";
}

}  // namespace
}  // namespace packfs
