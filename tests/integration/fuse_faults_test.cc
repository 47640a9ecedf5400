// Faults under a live mount: shards deleted, replaced, truncated and the catalog damaged or
// deleted while packfs serves them. The members affected fail with EIO and a log line naming
// shard and member; every other member keeps reading its exact bytes; the daemon never dies.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::ForegroundPackfs;
using testing::TempDir;
using testing::WaitMounted;

constexpr int kFiles = 24;  // 8 per shard: f00..f07 in pack-0000.zip, f08.. in 0001, f16.. in 0002

std::string Name(int i) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "f%02d", i);
  return buf;
}

// The bytes of `path` read whole, or the errno of the first failing call.
struct ReadOutcome {
  int err = 0;
  std::string bytes;
};
ReadOutcome ReadWhole(const std::string& path) {
  ReadOutcome out;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    out.err = errno;
    return out;
  }
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      out.err = errno;
      break;
    }
    if (n == 0) break;
    out.bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    for (int i = 0; i < kFiles; ++i) {
      testing::WriteFile(tmp_ / ("tree/" + Name(i)),
                         testing::RandomBytes(50000, static_cast<uint64_t>(i) + 100));
    }
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 8);
    auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp_ / "media"});
    ASSERT_EQ(cat.exit_code, 0) << cat.err;
    mnt_ = testing::MakeMountPoint(tmp_ / "mnt");
    ASSERT_FALSE(mnt_.empty()) << std::strerror(errno);
    log_ = tmp_ / "stderr.txt";
    packfs_ = std::make_unique<ForegroundPackfs>(
        std::vector<std::string>{"-f", "--catalog", tmp_ / "media/.packfs-catalog.sqlite",
                                 tmp_ / "media", mnt_},
        log_);
    ASSERT_TRUE(WaitMounted(mnt_, true)) << testing::ReadFile(log_);
  }
  void TearDown() override {
    if (packfs_) {
      // Whatever happened, the daemon must still be there to be asked to leave.
      EXPECT_TRUE(packfs_->Running()) << "packfs died: " << testing::ReadFile(log_);
      testing::Run({"fusermount3", "-u", mnt_});
      EXPECT_NE(packfs_->Wait(20), -1);
      EXPECT_TRUE(WaitMounted(mnt_, false));
    }
  }
  std::string Source(int i) { return testing::ReadFile(tmp_ / ("tree/" + Name(i))); }
  std::string Mnt(int i) { return mnt_ + "/" + Name(i); }
  void ExpectIntact(int i) {
    ReadOutcome r = ReadWhole(Mnt(i));
    EXPECT_EQ(r.err, 0) << Name(i) << ": " << testing::ReadFile(log_);
    EXPECT_TRUE(r.bytes == Source(i)) << Name(i) << " served other bytes";
  }
  void ExpectEio(int i) {
    ReadOutcome r = ReadWhole(Mnt(i));
    EXPECT_EQ(r.err, EIO) << Name(i) << " read " << r.bytes.size() << " bytes";
  }
  uint64_t XattrNumber(int i, const char* name) {
    int err = 0;
    const std::string value = testing::XattrText(Mnt(i), name, &err);
    EXPECT_TRUE(err == 0 && !value.empty()) << name << ": " << std::strerror(err);
    return std::strtoull(value.c_str(), nullptr, 10);
  }

  TempDir tmp_;
  std::string mnt_;
  std::string log_;
  std::unique_ptr<ForegroundPackfs> packfs_;
};

TEST_F(FaultsTest, DeletedShardFailsOnlyItsMembers) {
  ExpectIntact(0);
  ASSERT_EQ(::unlink((tmp_ / "media/pack-0002.zip").c_str()), 0);
  ExpectEio(16);
  ExpectEio(17);
  for (int i = 0; i < 16; ++i) ExpectIntact(i);
  std::string log = testing::ReadFile(log_);
  EXPECT_NE(log.find("pack-0002.zip"), std::string::npos) << log;
  EXPECT_NE(log.find("f16"), std::string::npos) << log;
}

TEST_F(FaultsTest, ReplacedShardNeverServesOtherBytes) {
  ExpectIntact(8);  // pack-0001.zip is open from here on
  // A different pack of the same names and sizes, renamed over shards 1 and 2.
  for (int i = 0; i < kFiles; ++i) {
    testing::WriteFile(tmp_ / ("other/" + Name(i)),
                       testing::RandomBytes(50000, static_cast<uint64_t>(i) + 900));
  }
  testing::MakePythonPack(tmp_ / "other", tmp_ / "other-media", 8);
  for (const char* shard : {"pack-0001.zip", "pack-0002.zip"}) {
    ASSERT_EQ(::rename((tmp_ / ("other-media/" + std::string(shard))).c_str(),
                       (tmp_ / ("media/" + std::string(shard))).c_str()),
              0);
  }
  // The open shard still reads the file it opened, which the catalog describes.
  for (int i = 8; i < 16; ++i) ExpectIntact(i);
  // The replaced, never-opened shard fails its check: EIO, not the new file's bytes.
  for (int i = 16; i < kFiles; ++i) ExpectEio(i);
  for (int i = 0; i < 8; ++i) ExpectIntact(i);
  std::string log = testing::ReadFile(log_);
  EXPECT_NE(log.find("pack-0002.zip"), std::string::npos) << log;
}

TEST_F(FaultsTest, TruncatedShardServesWhatIsLeft) {
  ExpectIntact(0);  // pack-0000.zip is open
  const uint64_t cut = XattrNumber(5, "user.packfs.offset") + 100;
  ASSERT_EQ(::truncate((tmp_ / "media/pack-0000.zip").c_str(), static_cast<off_t>(cut)), 0);
  for (int i = 1; i < 5; ++i) ExpectIntact(i);
  ExpectEio(5);
  ExpectEio(6);
  ExpectEio(7);
  for (int i = 8; i < kFiles; ++i) ExpectIntact(i);
  std::string log = testing::ReadFile(log_);
  EXPECT_NE(log.find("pack-0000.zip"), std::string::npos) << log;
  EXPECT_NE(log.find("f06"), std::string::npos) << log;
}

TEST_F(FaultsTest, DeletedCatalogKeepsServing) {
  ASSERT_EQ(::unlink((tmp_ / "media/.packfs-catalog.sqlite").c_str()), 0);
  for (int i = 0; i < kFiles; ++i) ExpectIntact(i);
}

// Damage inside the catalog under a live mount, placed by what the mount reads there: the
// pages of the node table and its (parent, name) index, read by every lookup and read, or the
// pages of the shard and problem tables, read only at open. Found with SQLite's own dbstat
// table, so the test knows which outcome each member must have rather than counting outcomes.
class DamagedCatalogTest : public FaultsTest {
 protected:
  // Overwrites, in place (the daemon keeps its open, mapped file), every page of the catalog's
  // b-trees `names` (a comma-separated SQL list of quoted names) with 0xa5 bytes. Returns how
  // many pages were damaged.
  int DamagePagesOf(const std::string& names) {
    // The root's attributes first: the kernel keeps them (attr_timeout is a year), so what
    // follows the damage is each member's own lookup and read, not a failed getattr of the root
    // that would fail every path alike.
    struct stat root;
    EXPECT_EQ(::stat(mnt_.c_str(), &root), 0) << std::strerror(errno);
    const std::string cat = tmp_ / "media/.packfs-catalog.sqlite";
    testing::RunResult pages = testing::Run(
        {"python3", "-c",
         "import sqlite3, sys\n"
         "db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)\n"
         "print(db.execute('PRAGMA page_size').fetchone()[0])\n"
         "for (p,) in db.execute('SELECT pageno FROM dbstat WHERE name IN (' + sys.argv[2] + ')'):\n"
         "    print(p)\n",
         cat, names});
    EXPECT_EQ(pages.exit_code, 0) << pages.err;
    std::istringstream in(pages.out);
    long page_size = 0;
    in >> page_size;
    EXPECT_GE(page_size, 512) << pages.out;
    int fd = ::open(cat.c_str(), O_WRONLY);
    EXPECT_GE(fd, 0) << cat;
    const std::string junk(static_cast<size_t>(page_size), '\xa5');
    int damaged = 0;
    for (long page; in >> page;) {
      EXPECT_EQ(::pwrite(fd, junk.data(), junk.size(), (page - 1) * page_size),
                static_cast<ssize_t>(junk.size()))
          << "page " << page;
      ++damaged;
    }
    ::close(fd);
    return damaged;
  }
};

// Without its node rows the mount cannot find a member: every lookup fails with EIO (never
// ENOENT, which would say the member does not exist, and never another member's bytes), the log
// names the catalog, and the daemon keeps answering.
TEST_F(DamagedCatalogTest, DamagedNodePagesFailEveryLookupWithEio) {
  ASSERT_GT(DamagePagesOf("'nodes', 'fences'"), 0);
  for (int i = 0; i < kFiles; ++i) ExpectEio(i);
  const std::string log = testing::ReadFile(log_);
  EXPECT_NE(log.find("lookup: " + tmp_ / "media/.packfs-catalog.sqlite"), std::string::npos)
      << log;
  struct statvfs vfs;
  EXPECT_EQ(::statvfs(mnt_.c_str(), &vfs), 0) << std::strerror(errno);
}

// The shard and problem tables are loaded at open; damage there after the mount changes
// nothing: every member still serves its exact bytes.
TEST_F(DamagedCatalogTest, DamagedPagesReadOnlyAtOpenChangeNothing) {
  ASSERT_GT(DamagePagesOf("'shards', 'problems'"), 0);
  for (int i = 0; i < kFiles; ++i) ExpectIntact(i);
}

}  // namespace
}  // namespace packfs
