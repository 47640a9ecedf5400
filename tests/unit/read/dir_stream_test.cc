// DirStream (core/read/dir_stream.h) on a real file on disk: an asked-for directory's extent, and
// only it, ends up in the page cache, once per directory; an extent memory has no room for is
// skipped; a stream whose room runs out stops part way; a stream stopped by the destructor ends;
// a shard without a file streams from its local copy.
#include "core/read/dir_stream.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "core/read/page_cache.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class DirStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // On disk (the page cache of a tmpfs file cannot be dropped).
    path_ = tmp_ / "shard";
    testing::WriteFile(path_, testing::RandomBytes(12 * kMiB, 3));
    auto src = FileShardSource::Open(path_, "shard");
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    lease_ = std::move(*src);
    ASSERT_EQ(::fsync(lease_->fd()), 0);
    ASSERT_EQ(::posix_fadvise(lease_->fd(), 0, 0, POSIX_FADV_DONTNEED), 0);
    auto st = CacheStateOf(lease_->fd(), 0, 12 * kMiB);
    if (!st) GTEST_SKIP() << "no cachestat(2) on this kernel";
    ASSERT_EQ(st->cached, 0u) << "the page cache of " << path_ << " could not be dropped";
  }
  uint64_t CachedPages(uint64_t from, uint64_t to) const {
    return CacheStateOf(lease_->fd(), from, to - from)->cached;
  }
  DirStream::ExtentsOf OneExtent(uint64_t dir, uint64_t from, uint64_t to) {
    return [this, dir, from, to](uint64_t d) {
      ++asked_;
      std::vector<DirStream::Extent> out;
      if (d == dir) out.push_back(DirStream::Extent{lease_, from, to, nullptr});
      return out;
    };
  }

  testing::TempDir tmp_{"/var/tmp"};
  std::string path_;
  ShardLease lease_;
  Stats stats_;
  std::atomic<int> asked_{0};
};

TEST_F(DirStreamTest, StreamsTheExtentOfADirectoryOnce) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  DirStream s(
      OneExtent(5, 1 * kMiB, 7 * kMiB + 512), [] { return std::optional<uint64_t>(1ull << 40); },
      stats_);
  s.Want(5);
  s.Want(5);
  s.Want(6);  // no extent
  s.Drain();
  s.Want(5);
  s.Drain();
  EXPECT_EQ(asked_.load(), 2);
  // Every page was read in (the byte count below); reclaim driven by tests running beside this
  // one may take a few back before they are counted.
  EXPECT_GE(CachedPages(1 * kMiB, 7 * kMiB) * 10, 6 * kMiB / page * 9);
  // Nothing before the extent, nor well after it, was read.
  EXPECT_EQ(CachedPages(0, 1 * kMiB), 0u);
  EXPECT_EQ(CachedPages(8 * kMiB, 12 * kMiB), 0u);
  EXPECT_EQ(stats_.stream_count(Stats::StreamEvent::kExtent), 1u);
  EXPECT_EQ(stats_.streamed_bytes(), 6 * kMiB + 512);
  EXPECT_EQ(stats_.stream_count(Stats::StreamEvent::kNoRoom), 0u);
}

TEST_F(DirStreamTest, AShardWithoutAFileIsStreamedFromItsLocalCopy) {
  // A remote shard (here: in memory, fd() -1) whose disk cache holds the extent: the stream
  // reads the copy's pages in; without a copy it streams nothing.
  ShardLease remote = std::make_shared<MemoryShardSource>(
      "remote", std::vector<uint8_t>(12 * kMiB, 7));
  ASSERT_LT(remote->fd(), 0);
  auto copy = std::make_shared<const UniqueFd>(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(copy->valid());
  DirStream s(
      [&](uint64_t d) {
        std::vector<DirStream::Extent> out;
        out.push_back(DirStream::Extent{remote, 2 * kMiB, 5 * kMiB, d == 1 ? copy : nullptr});
        return out;
      },
      [] { return std::optional<uint64_t>(1ull << 40); }, stats_);
  s.Want(2);
  s.Drain();
  EXPECT_EQ(CachedPages(0, 12 * kMiB), 0u);
  EXPECT_EQ(stats_.streamed_bytes(), 0u);
  s.Want(1);
  s.Drain();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GE(CachedPages(2 * kMiB, 5 * kMiB) * 10, 3 * kMiB / page * 9);
  EXPECT_EQ(CachedPages(6 * kMiB, 12 * kMiB), 0u);
  EXPECT_EQ(stats_.streamed_bytes(), 3 * kMiB);
}

TEST_F(DirStreamTest, AnExtentMemoryHasNoRoomForIsSkipped) {
  const uint64_t size = 4 * kMiB;
  // One byte short of twice the extent plus the reserve.
  DirStream s(
      OneExtent(1, 0, size),
      [&] { return std::optional<uint64_t>(2 * size + DirStream::kReserve - 1); }, stats_);
  s.Want(1);
  s.Drain();
  EXPECT_EQ(asked_.load(), 1);
  EXPECT_EQ(stats_.stream_count(Stats::StreamEvent::kNoRoom), 1u);
  EXPECT_EQ(stats_.stream_count(Stats::StreamEvent::kExtent), 0u);
  EXPECT_EQ(CachedPages(0, 12 * kMiB), 0u);

  // Unknown room: nothing either.
  Stats stats;
  DirStream unknown(
      OneExtent(1, 0, size), [] { return std::optional<uint64_t>(); }, stats);
  unknown.Want(1);
  unknown.Drain();
  EXPECT_EQ(stats.stream_count(Stats::StreamEvent::kNoRoom), 1u);
  EXPECT_EQ(CachedPages(0, 12 * kMiB), 0u);
}

TEST_F(DirStreamTest, AStreamStopsWhenTheRoomRunsOut) {
  std::atomic<int> calls{0};
  // Room for all of it at the start, none at the first look after kCheckEvery chunks.
  DirStream s(
      OneExtent(1, 0, 12 * kMiB),
      [&] { return std::optional<uint64_t>(calls++ == 0 ? 1ull << 40 : 0); }, stats_);
  s.Want(1);
  s.Drain();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(stats_.stream_count(Stats::StreamEvent::kExtent), 1u);
  EXPECT_EQ(stats_.stream_count(Stats::StreamEvent::kStopped), 1u);
  EXPECT_EQ(stats_.streamed_bytes(), DirStream::kCheckEvery * DirStream::kChunk);
  EXPECT_EQ(CachedPages(12 * kMiB - kMiB, 12 * kMiB), 0u);
}

TEST_F(DirStreamTest, DestroyingItWithWorkQueuedEndsTheStream) {
  {
    DirStream s(
        [this](uint64_t) {
          return std::vector<DirStream::Extent>{DirStream::Extent{lease_, 0, 12 * kMiB, nullptr}};
        },
        [] { return std::optional<uint64_t>(1ull << 40); }, stats_);
    for (uint64_t d = 0; d < 100; ++d) s.Want(d);
  }  // joins: at most the extent in hand is streamed
  EXPECT_LE(stats_.stream_count(Stats::StreamEvent::kExtent), 1u);
}

}  // namespace
}  // namespace packfs
