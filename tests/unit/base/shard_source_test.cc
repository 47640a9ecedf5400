// Unit tests for ShardSource implementations and ReadExactly.
#include "core/base/shard_source.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tests/support/test_util.h"

namespace packfs {
namespace {

TEST(MemoryShardSourceTest, ReadsAndClipsAtEnd) {
  MemoryShardSource src("mem.zip", {1, 2, 3, 4, 5});
  uint8_t buf[4];
  auto n = src.ReadAt(3, buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(buf[0], 4);
  EXPECT_EQ(buf[1], 5);
  auto past = src.ReadAt(99, buf);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(*past, 0u);
}

TEST(ReadExactlyTest, FailsNamingShardWhenTruncated) {
  MemoryShardSource src("media/pack-0001.zip", {1, 2, 3});
  uint8_t buf[4];
  Status st = ReadExactly(src, 0, buf, "the local header of a.bin");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kCorruption);
  EXPECT_NE(st.message().find("media/pack-0001.zip"), std::string::npos);
  EXPECT_NE(st.message().find("local header of a.bin"), std::string::npos);
}

TEST(FileShardSourceTest, ConcurrentPositionalReads) {
  testing::TempDir tmp;
  std::string data = testing::RandomBytes(1 << 20, 7);
  testing::WriteFile(tmp / "f.bin", data);
  auto src = FileShardSource::Open(tmp / "f.bin", "f.bin");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ((*src)->size(), data.size());
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> buf(4096 + t);
      for (int i = 0; i < 200; ++i) {
        uint64_t off = (static_cast<uint64_t>(i) * 7919 * (t + 1)) % data.size();
        auto n = (*src)->ReadAt(off, buf);
        if (!n.ok()) { ++bad; continue; }
        if (std::memcmp(buf.data(), data.data() + off, *n) != 0) ++bad;
        if (*n != std::min<uint64_t>(buf.size(), data.size() - off)) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(FileShardSourceTest, MissingFileNamesIt) {
  auto src = FileShardSource::Open("/nonexistent/x.zip", "media/x.zip");
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().err(), ENOENT);
  EXPECT_NE(src.status().message().find("media/x.zip"), std::string::npos);
}

}  // namespace
}  // namespace packfs
