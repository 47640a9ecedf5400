// Real mounts of a pack set on nginx with --disk-cache: a first mount reads every file (bytes
// compared with the source), then the shards on the server are overwritten with random bytes of
// the same size and modification time (their ETags unchanged); a second mount with the same disk
// cache must serve every file correctly and send no ranged GET for shard data but its one range
// probe — any byte fetched from the network would be garbage. A pack set rebuilt on the server
// between two mounts serves its new bytes. Also: --cache-size and
// --disk-cache-size are parsed (a bad size fails the mount with a message naming the flag).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base/unique_fd.h"
#include "tests/support/http_servers.h"
#include "tests/support/mount_util.h"
#include "tests/support/remote_fixture.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::Mount;
using testing::TempDir;

// Access-log lines naming shard objects (GETs and HEADs), once the log stops growing.
size_t ShardRequests(const testing::NginxServer& server) {
  return server.SettledRequests("/pack-");
}

class RemoteCacheMountTest : public testing::FreshServedSetTest {
 protected:
  RemoteCacheMountTest() : FreshServedSetTest("1M") {}
  void WriteTree() override {
    for (int i = 0; i < 24; ++i) {
      testing::WriteFile(tmp_ / ("src/small/f" + std::to_string(i)),
                         testing::RandomBytes((static_cast<size_t>(i) * 7919) % 90000, i + 1));
    }
    // Past the whole-member limit: read in blocks with read-ahead.
    testing::WriteFile(tmp_ / "src/big/large.bin", testing::RandomBytes(6 << 20, 77));
    testing::WriteFile(tmp_ / "src/big/medium.bin", testing::RandomBytes(1500000, 78));
  }
  std::vector<std::string> Args() const {
    return {"--cache-dir", tmp_ / "cat", "--disk-cache", tmp_ / "disk", "--cache-size", "16M",
            "--disk-cache-size", "1G"};
  }
  void ExpectTreeIsSource() { testing::ExpectSameFiles(tmp_ / "src", tmp_ / "mnt"); }
  // The mount's "remote_cache" counters (user.packfs.stats).
  nlohmann::json CacheStats() const { return testing::MountStats(tmp_ / "mnt")["remote_cache"]; }
};

TEST_F(RemoteCacheMountTest, SecondMountReadsEverythingFromTheDiskCache) {
  {
    Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
    ASSERT_TRUE(m.ok()) << m.result().err;
    ExpectTreeIsSource();
  }
  ASSERT_FALSE(testing::IsMounted(tmp_ / "mnt"));
  // Garbage of the same size and mtime: nginx's ETag ("mtime-size") and the mount's HEAD checks
  // are unchanged, but a GET would now return wrong bytes.
  auto r = testing::Sh("cd '" + (tmp_ / "www/media") + "' && for f in pack-*.zip; do "
                       "head -c $(stat -c %s $f) /dev/urandom > $f.new && touch -r $f $f.new && "
                       "mv $f.new $f; done");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t before = ShardRequests(*server_);
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  // One request for all the shards: the 4-byte range probe of pack-0000.zip.
  const size_t after_mount = ShardRequests(*server_);
  EXPECT_EQ(after_mount, before + 1) << server_->AccessLog();
  ExpectTreeIsSource();
  EXPECT_EQ(ShardRequests(*server_), after_mount) << server_->AccessLog();
  // The reader's counters in the stats attribute say the same: no GET, every extent from disk.
  const nlohmann::json stats = CacheStats();
  EXPECT_EQ(stats["requests"], 0) << stats;
  EXPECT_GT(stats["disk_hits"], 0) << stats;
}

// The pack set is rebuilt on the server (new content, new catalog) between two mounts sharing
// the catalog and disk caches: the second mount fetches the new catalog and serves the new bytes,
// never the old ones the disk cache still holds.
TEST_F(RemoteCacheMountTest, ACatalogReplacedBetweenMountsServesTheNewSet) {
  {
    Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
    ASSERT_TRUE(m.ok()) << m.result().err;
    ExpectTreeIsSource();
  }
  for (int i = 0; i < 24; i += 3) {
    testing::WriteFile(tmp_ / ("src/small/f" + std::to_string(i)),
                       testing::RandomBytes((static_cast<size_t>(i) * 7919) % 90000, i + 500));
  }
  testing::WriteFile(tmp_ / "src/small/new.bin", testing::RandomBytes(3000, 600));
  auto r = testing::Sh("rm -rf '" + (tmp_ / "www/media") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::PackTree(tmp_ / "src", tmp_ / "www/media", "1M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // nginx's ETag is the mtime in whole seconds and the size: a catalog rebuilt within the same
  // second at the same size (SQLite grows in pages) would look unchanged to any HTTP client.
  r = testing::Sh("touch -d '@'$(($(date +%s) + 5)) '" + (tmp_ / "www/media") +
                  "/.packfs-catalog.sqlite'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  ExpectTreeIsSource();
}

// Cached bytes reach readers two ways, copied through the reader or (reads of 128 KiB and more)
// spliced straight from the cache file; damaged bytes must reach neither.
TEST_F(RemoteCacheMountTest, DamagedDiskCacheBytesAreFetchedAgainNeverServed) {
  {
    Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
    ASSERT_TRUE(m.ok()) << m.result().err;
    ExpectTreeIsSource();
  }
  // Flip a byte every 32 KiB of every cache data file (a hole stays a hole: no extent there).
  size_t flipped = 0;
  for (const auto& e : fs::recursive_directory_iterator(tmp_ / "disk")) {
    if (!e.is_regular_file() || e.path().extension() == ".ext") continue;
    UniqueFd fd(::open(e.path().c_str(), O_RDWR));
    ASSERT_TRUE(fd.valid()) << e.path();
    const off_t size = ::lseek(fd.get(), 0, SEEK_END);
    for (off_t at = 1000; at < size; at += 32 << 10) {
      const off_t data = ::lseek(fd.get(), at, SEEK_DATA);
      if (data < 0 || data >= size) break;
      uint8_t b = 0;
      ASSERT_EQ(::pread(fd.get(), &b, 1, data), 1);
      b ^= 0x5a;
      ASSERT_EQ(::pwrite(fd.get(), &b, 1, data), 1);
      ++flipped;
      at = data;
    }
  }
  ASSERT_GT(flipped, 10u);
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  ExpectTreeIsSource();
  const nlohmann::json stats = CacheStats();
  EXPECT_GT(stats["disk_damaged"], 0) << stats;
  EXPECT_GT(stats["requests"], 0) << stats;
}

TEST_F(RemoteCacheMountTest, AMemberUnderTheWholeLimitIsOneRequestAndOneCachedExtent) {
  // Large reads take the zero-copy preparation, which checks the member's local header first:
  // that check must fetch the member whole (what the reads need next), not a block around the
  // header — that would be a second GET cold and a second extent on disk.
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  const size_t after_mount = ShardRequests(*server_);
  // One large read(2), as a loader reads a file: the kernel's first request is then 128 KiB.
  std::string got(2 << 20, '\0');
  {
    UniqueFd fd(::open((tmp_ / "mnt/big/medium.bin").c_str(), O_RDONLY));
    ASSERT_TRUE(fd.valid());
    size_t n = 0;
    for (ssize_t r; (r = ::read(fd.get(), got.data() + n, got.size() - n)) > 0;) n += r;
    got.resize(n);
  }
  EXPECT_TRUE(got == testing::ReadFile(tmp_ / "src/big/medium.bin"));
  EXPECT_EQ(ShardRequests(*server_), after_mount + 1) << server_->AccessLog();
  // One data file holding the member at its shard offset, and one extent-log record for it.
  std::vector<uint64_t> data_blocks, log_sizes;
  for (const auto& e : fs::recursive_directory_iterator(tmp_ / "disk")) {
    struct stat st;
    if (!e.is_regular_file() || ::stat(e.path().c_str(), &st) != 0) continue;
    if (e.path().extension() == ".ext") {
      log_sizes.push_back(static_cast<uint64_t>(st.st_size));
    } else {
      data_blocks.push_back(static_cast<uint64_t>(st.st_blocks) * 512);
    }
  }
  ASSERT_EQ(data_blocks.size(), 1u);
  ASSERT_EQ(log_sizes.size(), 1u);
  EXPECT_GT(data_blocks[0], 1500000u);         // the member's data (a sparse file: only it),
  EXPECT_LT(data_blocks[0], 1500000u + 16384);  // its local header, padding, block rounding
  EXPECT_EQ(log_sizes[0], 16u + 32u);           // the log's header and one record: one extent
}

TEST_F(RemoteCacheMountTest, BadSizesFailTheMountNamingTheFlag) {
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", {"--cache-size", "lots"});
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.result().err.find("--cache-size"), std::string::npos) << m.result().err;
  Mount m2({server_->url() + "/media"}, tmp_ / "mnt", {"--disk-cache-size", "1G"});
  EXPECT_FALSE(m2.ok());
  EXPECT_NE(m2.result().err.find("--disk-cache"), std::string::npos) << m2.result().err;
  Mount m3({server_->url() + "/media"}, tmp_ / "mnt", {"--cache-size", "100K"});
  EXPECT_FALSE(m3.ok());
  EXPECT_NE(m3.result().err.find("--cache-size"), std::string::npos) << m3.result().err;
}

}  // namespace
}  // namespace packfs
