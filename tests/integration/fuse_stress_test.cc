// Stress over a real mount: 16 threads read random ranges (and sometimes whole files) of random
// members for a while, checking every byte; the daemon's anonymous memory must stay flat after
// warm-up, apart from its pool of read buffers meeting larger reads (bounded by design, and
// reported in user.packfs.stats). CI runs it briefly (also under ASan); a long run is
//   PACKFS_STRESS_SECONDS=300 PACKFS_STRESS_MEMBERS=100000 build/fuse_stress_test
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::TempDir;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Member i: its key and size. Mostly small files (the loader case, read by copy), every 500th
// 1-3 MiB (read zero-copy in 128 KiB+ requests), some empty.
std::string Key(uint64_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "d%03llu/m%06llu.bin", static_cast<unsigned long long>(i / 1000),
                static_cast<unsigned long long>(i));
  return buf;
}
size_t SizeOf(uint64_t i) {
  if (i % 500 == 7) return 1048576 + (i * 7919) % 2097152;
  if (i % 97 == 0) return 0;
  return 1 + (i * 7919) % 40000;
}

// RssAnon of `pid` in KiB (heap and stacks: what a leak grows; file pages of the catalog and
// shards are not counted).
long RssAnonKib(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::strtol(line.c_str() + 8, nullptr, 10);
  }
  return -1;
}

TEST(FuseStressTest, SixteenThreadsOfRandomReadsCheckEveryByte) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  const uint64_t members = EnvOr("PACKFS_STRESS_MEMBERS", 5000);
  const uint64_t seconds = EnvOr("PACKFS_STRESS_SECONDS", 12);
  TempDir tmp;
  std::vector<std::string> expected(members);
  for (uint64_t i = 0; i < members; ++i) {
    expected[i] = testing::RandomBytes(SizeOf(i), i + 7);
    testing::WriteFile(tmp / ("src/" + Key(i)), expected[i]);
  }
  auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp / "src",
                            tmp / "media"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  testing::Run({"rm", "-rf", tmp / "src"});  // bytes now come only from the shards
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  Mount mount({tmp / "media"}, tmp / "mnt");
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  auto pid = testing::Sh("pgrep -n -f 'packfs .*" + mnt + "$'");
  ASSERT_EQ(pid.exit_code, 0);
  const std::string daemon = pid.out.substr(0, pid.out.find('\n'));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, bytes{0}, mismatches{0}, errors{0};
  std::vector<std::string> first_failure(16);
  auto read_for = [&](std::chrono::milliseconds how_long) {
    stop = false;
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(t) * 1000003 + 1 + reads.load());
        std::vector<char> buf(4 << 20);
        while (!stop.load(std::memory_order_relaxed)) {
          const uint64_t i = rng() % members;
          const std::string& want = expected[i];
          const std::string path = mnt + "/" + Key(i);
          int fd = ::open(path.c_str(), O_RDONLY);
          if (fd < 0) {
            ++errors;
            if (first_failure[t].empty()) first_failure[t] = "open " + path;
            continue;
          }
          // Half the reads first drop the file's cached pages, so they reach the daemon
          // instead of the kernel's page cache.
          if (rng() % 2 == 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
          const bool whole = rng() % 4 == 0;
          const size_t off = whole || want.empty() ? 0 : rng() % (want.size() + 1);
          const size_t len = whole ? buf.size() : 1 + rng() % (256 * 1024);
          ssize_t n = ::pread(fd, buf.data(), len, static_cast<off_t>(off));
          ::close(fd);
          if (n < 0) {
            ++errors;
            if (first_failure[t].empty()) first_failure[t] = "pread " + path;
            continue;
          }
          const size_t expect_n = std::min(len, want.size() - std::min(off, want.size()));
          ++reads;
          bytes += static_cast<uint64_t>(n);
          // A positional read of a regular file returns everything up to EOF or the length.
          if (static_cast<size_t>(n) != expect_n ||
              want.compare(off, expect_n, buf.data(), expect_n) != 0) {
            ++mismatches;
            if (first_failure[t].empty()) {
              first_failure[t] = path + " at " + std::to_string(off) + "+" +
                                 std::to_string(len) + ": got " + std::to_string(n) + " bytes";
            }
          }
        }
      });
    }
    std::this_thread::sleep_for(how_long);
    stop = true;
    for (auto& th : threads) th.join();
  };
  // Read once the readers have stopped and the push threads have handed their buffers back (a
  // quiet moment: every read buffer is idle): the daemon's RssAnon, and from its stats the READs
  // it served, the resident bytes of its idle read buffers and what malloc holds freed.
  struct Quiet {
    long rss_kib = -1;
    unsigned long long reads = 0;
    long buffers_kib = -1, free_kib = -1;
    std::string push, err;
    long InUse() const { return rss_kib - buffers_kib - free_kib; }
  };
  auto quiet = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Quiet q;
    const nlohmann::json s = testing::MountStats(mnt);
    q.rss_kib = RssAnonKib(daemon);
    q.err = s.dump();
    const nlohmann::json* idle = s.contains("read_buffers") ? &s["read_buffers"] : nullptr;
    if (s.contains("requests") && idle && idle->contains("idle_resident_bytes") &&
        s.contains("malloc") && s["malloc"].contains("free_bytes")) {
      q.reads = s["requests"]["read"].get<unsigned long long>();
      q.buffers_kib = static_cast<long>((*idle)["idle_resident_bytes"].get<uint64_t>() / 1024);
      q.free_kib = static_cast<long>(s["malloc"]["free_bytes"].get<uint64_t>() / 1024);
      q.push = s.value("push", nlohmann::json()).dump() + "\n";
    }
    return q;
  };
  // Warm-up: a fifth of the run, then the daemon's anonymous memory is the baseline.
  const auto run = std::chrono::milliseconds(seconds * 1000);
  read_for(run / 5);
  const Quiet warm = quiet();
  read_for(run * 4 / 5);
  const Quiet end = quiet();
  std::printf("stress: %llu reads (%llu reached the daemon), %.1f MiB, %llu mismatches, %llu "
              "errors; daemon RssAnon %ld KiB after warm-up, %ld KiB at the end (idle read "
              "buffers %ld and %ld KiB, malloc's free memory %ld and %ld KiB)\n",
              static_cast<unsigned long long>(reads.load()), end.reads,
              bytes.load() / 1048576.0, static_cast<unsigned long long>(mismatches.load()),
              static_cast<unsigned long long>(errors.load()), warm.rss_kib, end.rss_kib,
              warm.buffers_kib, end.buffers_kib, warm.free_kib, end.free_kib);
  std::printf("stress: daemon pushes: %s", end.push.c_str());
  std::string failures;
  for (const auto& f : first_failure) {
    if (!f.empty()) failures += f + "\n";
  }
  EXPECT_GT(reads.load(), 1000u);
  EXPECT_GT(end.reads, reads.load() / 4) << end.err;
  EXPECT_EQ(mismatches.load(), 0u) << failures;
  EXPECT_EQ(errors.load(), 0u) << failures;
  ASSERT_GT(warm.rss_kib, 0);
  ASSERT_GE(warm.buffers_kib, 0) << warm.err;
  ASSERT_GE(end.buffers_kib, 0) << end.err;
  // Flat: memory in use under 10% growth (plus 1 MiB so allocator noise on a small baseline is
  // not a leak). In use: RssAnon but the idle read buffers (each keeps the pages of the largest
  // read it served, up to the pool's bound) and what malloc keeps freed for reuse. Not under
  // ASan, whose quarantine keeps freed memory by design (LeakSanitizer covers leaks there).
  const char* sanitized = std::getenv("PACKFS_SANITIZED");
  if (!sanitized || std::string(sanitized) != "1") {
    EXPECT_LE(end.InUse(), warm.InUse() + warm.rss_kib / 10 + 1024)
        << "daemon memory in use grew under a steady load";
  }
}

}  // namespace
}  // namespace packfs
