// CRC-32 checks through real mounts: a member whose data bytes were damaged inside its shard
// (size and mtime kept, so the catalog and shard checks still pass) fails with EIO, is named with
// its shard in the log and in user.packfs.errors, and fails again on every later read; undamaged
// members of the same shard read byte for byte; -o nocrc serves the damaged bytes. Small members
// (one READ) and members past the zero-copy size (several READs, in whatever order the kernel's
// read-ahead sends them) are both checked: a large member read through in order fails at its end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::TempDir;

struct ReadOutcome {
  int err = 0;
  std::string bytes;
};

// Reads `path` front to back in `chunk`-byte read(2)s until EOF or the first error.
ReadOutcome ReadWhole(const std::string& path, size_t chunk = 1 << 20) {
  ReadOutcome out;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    out.err = errno;
    return out;
  }
  std::string buf(chunk, '\0');
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) out.err = errno;
    if (n <= 0) break;
    out.bytes.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Drops the kernel's cached pages of a file of the mount, so that reading it again reaches packfs.
void DropPageCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << path;
  EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
}

class CrcMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    // One shard: small members, one past the zero-copy size (128 KiB) and below max_read, and
    // a large one read in many requests.
    Add("small/a.bin", 20000);
    Add("small/b.bin", 4096);
    Add("small/c.bin", 65536);
    Add("medium.bin", 300000);
    Add("large.bin", 24 << 20);
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 100);
    auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp_ / "media"});
    ASSERT_EQ(cat.exit_code, 0) << cat.err;
    mnt_ = testing::MakeMountPoint(tmp_ / "mnt");
    ASSERT_FALSE(mnt_.empty()) << std::strerror(errno);
  }
  void Add(const std::string& key, size_t size) {
    testing::WriteFile(tmp_ / ("tree/" + key), testing::RandomBytes(size, files_.size() + 40));
    files_[key] = testing::ReadFile(tmp_ / ("tree/" + key));
  }
  // Flips one byte at `at` of `key`'s data in its shard and restores the shard's mtime: what
  // bit rot or a bad copy does, invisible to the catalog's size and mtime check.
  void Damage(const std::string& key, uint64_t at) {
    auto where = testing::Run({testing::MkpackPath(), "resolve", tmp_ / "media", key});
    ASSERT_EQ(where.exit_code, 0) << where.err;
    std::istringstream fields(where.out);
    std::string shard, offset;
    std::getline(fields, shard, '\t');
    std::getline(fields, offset, '\t');
    const std::string pos = std::to_string(std::stoull(offset) + at);
    auto r = testing::Sh("cp -p '" + shard + "' '" + tmp_ / "stamp" + "' && python3 -c \"import sys\n"
                         "f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1)\n"
                         "f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x5a]))\" '" + shard +
                         "' " + pos + " && touch -r '" + tmp_ / "stamp" + "' '" + shard + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    files_damaged_[key] = files_[key];
    files_damaged_[key][at] = static_cast<char>(files_damaged_[key][at] ^ 0x5a);
  }
  std::vector<std::string> Args(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--log", tmp_ / "packfs.log"});
    return extra;
  }
  void ExpectIntact(const std::string& key) {
    ReadOutcome r = ReadWhole(mnt_ + "/" + key);
    EXPECT_EQ(r.err, 0) << key << ": " << testing::ReadFile(tmp_ / "packfs.log");
    EXPECT_TRUE(r.bytes == files_[key]) << key << ": other bytes (" << r.bytes.size() << ")";
  }

  TempDir tmp_;
  std::string mnt_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> files_damaged_;
};

TEST_F(CrcMountTest, DamagedSmallMemberIsEioAndNamed) {
  Damage("small/a.bin", 12345);
  Mount m({tmp_ / "media"}, mnt_, Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second read fails as well
    ReadOutcome r = ReadWhole(mnt_ + "/small/a.bin");
    EXPECT_EQ(r.err, EIO) << "read " << r.bytes.size() << " bytes";
    EXPECT_EQ(r.bytes, "");
  }
  for (const char* key : {"small/b.bin", "small/c.bin", "medium.bin", "large.bin"}) {
    ExpectIntact(key);
  }
  const std::string log = testing::ReadFile(tmp_ / "packfs.log");
  EXPECT_NE(log.find("reading 'small/a.bin' from media/pack-0000.zip: CRC-32 mismatch"),
            std::string::npos) << log;
  const nlohmann::json errors = testing::XattrJson(mnt_, "user.packfs.errors");
  ASSERT_TRUE(errors.is_array()) << errors;
  ASSERT_GE(errors.size(), 1u);
  EXPECT_EQ(errors[0]["path"], "small/a.bin");
  EXPECT_EQ(errors[0]["shard"], "media/pack-0000.zip");
  EXPECT_NE(errors[0]["message"].get<std::string>().find("CRC-32 mismatch"), std::string::npos);
  const nlohmann::json stats = testing::XattrJson(mnt_, "user.packfs.stats");
  EXPECT_EQ(stats["crc32"]["bad"], 1) << stats;
  EXPECT_EQ(stats["crc32"]["good"], 4) << stats;
}

TEST_F(CrcMountTest, DamagedMemberPastTheZeroCopySizeIsEio) {
  Damage("medium.bin", 299999);  // its last byte
  Mount m({tmp_ / "media"}, mnt_, Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  ReadOutcome r = ReadWhole(mnt_ + "/medium.bin", 4096);
  EXPECT_EQ(r.err, EIO) << "read " << r.bytes.size() << " bytes";
  EXPECT_LT(r.bytes.size(), files_["medium.bin"].size());
  ExpectIntact("small/a.bin");
  const nlohmann::json errors = testing::XattrJson(mnt_, "user.packfs.errors");
  ASSERT_TRUE(errors.is_array() && !errors.empty()) << errors;
  EXPECT_EQ(errors[0]["path"], "medium.bin");
}

TEST_F(CrcMountTest, LargeMemberDamagedInTheMiddleFailsAtItsEnd) {
  Damage("large.bin", 12 << 20);
  Mount m({tmp_ / "media"}, mnt_, Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  ReadOutcome r = ReadWhole(mnt_ + "/large.bin");
  EXPECT_EQ(r.err, EIO) << "read " << r.bytes.size() << " bytes";
  EXPECT_LT(r.bytes.size(), files_["large.bin"].size());
  // Read again, it fails again (the bytes the kernel kept may come first).
  r = ReadWhole(mnt_ + "/large.bin");
  EXPECT_EQ(r.err, EIO) << "read " << r.bytes.size() << " bytes";
  const std::string log = testing::ReadFile(tmp_ / "packfs.log");
  EXPECT_NE(log.find("'large.bin' from media/pack-0000.zip: CRC-32 mismatch"), std::string::npos)
      << log;
  ExpectIntact("medium.bin");
}

TEST_F(CrcMountTest, IntactMembersReadTwiceAndAreJudgedOnce) {
  Mount m({tmp_ / "media"}, mnt_, Args());
  ASSERT_TRUE(m.ok()) << m.result().err;
  for (const auto& [key, bytes] : files_) ExpectIntact(key);
  nlohmann::json stats = testing::XattrJson(mnt_, "user.packfs.stats");
  EXPECT_EQ(stats["crc32"]["good"], files_.size()) << stats;
  EXPECT_EQ(stats["crc32"]["bad"], 0) << stats;
  // Read again past the page cache: same bytes, nothing judged again.
  for (const auto& [key, bytes] : files_) DropPageCache(mnt_ + "/" + key);
  for (const auto& [key, bytes] : files_) ExpectIntact(key);
  stats = testing::XattrJson(mnt_, "user.packfs.stats");
  EXPECT_EQ(stats["crc32"]["good"], files_.size()) << stats;
  EXPECT_EQ(testing::XattrJson(mnt_, "user.packfs.errors"), nlohmann::json::array());
}

TEST_F(CrcMountTest, NocrcServesTheDamagedBytes) {
  Damage("small/a.bin", 7);
  Damage("large.bin", 5 << 20);
  Mount m({tmp_ / "media"}, mnt_, Args({"-o", "nocrc"}));
  ASSERT_TRUE(m.ok()) << m.result().err;
  for (const char* key : {"small/a.bin", "large.bin"}) {
    ReadOutcome r = ReadWhole(mnt_ + "/" + key);
    EXPECT_EQ(r.err, 0) << key;
    EXPECT_TRUE(r.bytes == files_damaged_[key]) << key;
  }
  ExpectIntact("medium.bin");
  EXPECT_EQ(testing::XattrJson(mnt_, "user.packfs.stats").count("crc32"), 0u);
}

}  // namespace
}  // namespace packfs
