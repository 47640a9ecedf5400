// Unit tests for WaitNotice: a FileShardSource read tells the calling thread's notice before it
// waits for the disk, and only then; scopes nest.
#include "core/base/wait_notice.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "core/base/shard_source.h"
#include "core/read/page_cache.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

struct CountingNotice final : WaitNotice {
  void BeforeWait() noexcept override { ++waits; }
  int waits = 0;
};

// Drops `path`'s pages from the page cache; false when they stay (a file system that keeps
// them, such as tmpfs) or the kernel cannot say (no cachestat).
bool Evict(const std::string& path, size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const std::optional<PageCacheState> state = CacheStateOf(fd, 0, size);
  ::close(fd);
  return state && state->cached == 0;
}

TEST(WaitNoticeTest, AReadTellsTheNoticeOnlyWhenItWaitsForTheDisk) {
  testing::TempDir tmp;
  const std::string data = testing::RandomBytes(1 << 20, 11);
  const std::string path = tmp / "pack-0000.zip";
  testing::WriteFile(path, data);
  auto src = FileShardSource::Open(path, "pack-0000.zip");
  ASSERT_TRUE(src.ok()) << src.status().message();
  std::string got(data.size(), '\0');
  auto read_all = [&] {
    auto n = (*src)->ReadAt(0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(got.data()),
                                                  got.size()));
    ASSERT_TRUE(n.ok()) << n.status().message();
    ASSERT_EQ(*n, data.size());
    EXPECT_EQ(got, data);
  };
  CountingNotice notice;
  {
    ScopedWaitNotice scope(&notice);
    read_all();  // just written: in the page cache
    EXPECT_EQ(notice.waits, 0);
    if (std::optional<PageCacheState> cached = CacheStateOf((*src)->fd(), 0, data.size())) {
      // What the splice path compares (fuse/lowlevel_ops.cc): every whole page of it is cached.
      EXPECT_EQ(cached->pages, data.size() / static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)));
      EXPECT_EQ(cached->cached, cached->pages);
    }
    if (!Evict(path, data.size())) GTEST_SKIP() << "cannot drop " << path << " from the cache";
    got.assign(data.size(), '\0');
    read_all();
    EXPECT_GE(notice.waits, 1);
    const int after_cold = notice.waits;
    read_all();  // cached again
    EXPECT_EQ(notice.waits, after_cold);
  }
  // With no notice set the read does not look.
  ASSERT_TRUE(Evict(path, data.size()));
  read_all();
  EXPECT_EQ(CurrentWaitNotice(), nullptr);
}

TEST(WaitNoticeTest, ScopesNestAndRestoreTheNoticeBefore) {
  CountingNotice outer, inner;
  EXPECT_EQ(CurrentWaitNotice(), nullptr);
  {
    ScopedWaitNotice a(&outer);
    EXPECT_EQ(CurrentWaitNotice(), &outer);
    {
      ScopedWaitNotice b(&inner);
      EXPECT_EQ(CurrentWaitNotice(), &inner);
    }
    EXPECT_EQ(CurrentWaitNotice(), &outer);
  }
  EXPECT_EQ(CurrentWaitNotice(), nullptr);
}

}  // namespace
}  // namespace packfs
