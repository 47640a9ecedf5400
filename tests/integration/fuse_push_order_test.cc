// Readers in shard order through a real mount (fuse/push.h, "Readers in shard order"): eight
// threads read a listed directory file after file as its shard holds them (a loader that does
// not shuffle). Each read's window takes the files it pushes, so a read that comes to files
// another read has taken leaves them to it: the daemon reads each stretch of the shard about
// once (its rchar in /proc), with the walk of a ready directory and without it (-o nowalk), and
// every file read has its bytes. Before, each read read a window of its own over the files the
// others were reading or pushing: 13-33x the set's bytes here, 3-12x in an epoch of 30,000.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::SettledPush;
using testing::TempDir;

constexpr int kFiles = 1500;
constexpr int kReaders = 8;

std::string Name(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "d/%05d.bin", i);
  return buf;
}

// Bytes the process has asked read() and pread() for, cached or not (/proc/PID/io's rchar).
uint64_t BytesRead(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "rchar:") return value;
  }
  ADD_FAILURE() << "no rchar in /proc/" << pid << "/io";
  return 0;
}

class FusePushOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    for (int i = 0; i < kFiles; ++i) {
      files_.push_back(testing::RandomBytes(4096 + static_cast<size_t>(i * 7919) % 16384, i + 1));
      testing::WriteFile(tmp_ / ("src/" + Name(i)), files_.back());
      bytes_ += files_.back().size();
    }
    auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp_ / "src",
                              tmp_ / "media"});
    ASSERT_EQ(pack.exit_code, 0) << pack.err;
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
  }

  TempDir tmp_;
  std::vector<std::string> files_;
  uint64_t bytes_ = 0;
};

// Reads the listed directory d/ in shard order with kReaders threads through a fresh mount with
// `options`, checking every file's bytes; returns the bytes the daemon read meanwhile (pushes
// settled) and its push counters.
std::pair<uint64_t, nlohmann::json> ReadInShardOrder(const TempDir& tmp,
                                                     const std::vector<std::string>& files,
                                                     const std::vector<std::string>& options) {
  Mount mount({tmp / "media"}, tmp / "mnt", options);
  EXPECT_TRUE(mount.ok()) << mount.result().err;
  if (!mount.ok()) return {0, {}};
  const std::string mnt = mount.path();
  const int pid = testing::MountStats(mnt)["pid"].get<int>();
  size_t listed = 0;
  for (const auto& e : std::filesystem::directory_iterator(mnt + "/d")) {
    listed += e.is_regular_file();
  }
  EXPECT_EQ(listed, files.size());
  const uint64_t before = BytesRead(pid);
  std::atomic<size_t> next{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      for (size_t i = next++; i < files.size(); i = next++) {
        if (testing::ReadFile(mnt + "/" + Name(static_cast<int>(i))) != files[i]) ++wrong;
      }
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  nlohmann::json push = SettledPush(mnt);
  return {BytesRead(pid) - before, push};
}

TEST_F(FusePushOrderTest, ReadersInShardOrderReadEachStretchOfTheShardAboutOnce) {
  // Each file through its own READ: the set once, plus the catalog's pages.
  const auto [alone, none] = ReadInShardOrder(tmp_, files_, {"-o", "nopush"});
  std::printf("nopush: read %.2fx the set's bytes\n",
              static_cast<double>(alone) / static_cast<double>(bytes_));
  for (bool walk : {true, false}) {
    SCOPED_TRACE(walk ? "walked" : "-o nowalk");
    const auto [read, push] = ReadInShardOrder(
        tmp_, files_, walk ? std::vector<std::string>{} : std::vector<std::string>{"-o", "nowalk"});
    // Pushing went on (about half the files here; the rest raced their pushes or came before
    // the directory was ready).
    EXPECT_GT(push["files"].get<int>(), kFiles / 4) << push;
    // Files taken for a window while their own READ was on its way are read twice: 1.3-1.9x
    // what the reads read alone (here, 2026-12-06). Reads over each other's windows: 13-33x.
    EXPECT_LT(read, alone * 3) << "read " << read << " bytes, " << alone << " without pushing; "
                               << push;
    std::printf("%s: read %.2fx the set's bytes; %s\n", walk ? "walked" : "nowalk",
                static_cast<double>(read) / static_cast<double>(bytes_), push.dump().c_str());
  }
}

}  // namespace
}  // namespace packfs
