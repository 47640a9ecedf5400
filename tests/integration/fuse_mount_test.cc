// Real packfs mounts of the interop fixtures and of freshly packed trees: hashes, diff -r, find,
// sizes, modes, mtimes, xattrs, stats JSON, EROFS on every write, and mount-time errors.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuse/read_ahead.h"
#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::Sh;
using testing::TempDir;

#define REQUIRE_FUSE()                                                   \
  do {                                                                   \
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here"; \
  } while (0)

// Checks every "<sha256>  <key>" line against the mount and that the mount holds no other file.
constexpr const char* kVerifyScript = R"PY(
import hashlib, os, sys
mnt, sums = sys.argv[1], sys.argv[2]
want = {}
for line in open(sums, encoding='utf-8'):
    line = line.rstrip('\n')
    if line:
        want[line[66:]] = line[:64]
bad = 0
for key, digest in want.items():
    with open(os.path.join(mnt, key), 'rb') as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != digest:
        print('MISMATCH', key); bad += 1
seen = set()
for root, dirs, files in os.walk(mnt):
    for f in files:
        seen.add(os.path.relpath(os.path.join(root, f), mnt))
for extra in sorted(seen - set(want)):
    print('EXTRA', extra); bad += 1
for missing in sorted(set(want) - seen):
    print('MISSING', missing); bad += 1
print('checked', len(want))
sys.exit(1 if bad else 0)
)PY";

// Every line of refs.txt ("zip://KEY::SHARD") equals the user.packfs.ref xattr of KEY.
constexpr const char* kRefsScript = R"PY(
import os, sys
mnt, refs = sys.argv[1], sys.argv[2]
bad = 0
for line in open(refs, encoding='utf-8'):
    ref = line.rstrip('\n')
    if not ref:
        continue
    key = ref[len('zip://'):ref.index('::')]
    got = os.getxattr(os.path.join(mnt, key), 'user.packfs.ref').decode()
    if got != ref:
        print('REF', key, got, ref); bad += 1
sys.exit(1 if bad else 0)
)PY";

class FixtureMountTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureMountTest, EveryMemberHashesLikeTheSource) {
  REQUIRE_FUSE();
  TempDir tmp;
  std::string src = testing::FixturesDir() + "/interop/" + GetParam();
  ASSERT_EQ(testing::Run({"cp", "-a", src, tmp / "set"}).exit_code, 0);
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  Mount m({tmp / "set/media"}, tmp / "mnt");
  ASSERT_TRUE(m.ok()) << m.result().err;
  auto v = testing::Run({"python3", "-c", kVerifyScript, m.path(), tmp / "set/sha256.txt"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  // find counts files and directories alike; the files must be exactly the sha256.txt lines.
  auto files = Sh("find '" + m.path() + "' -type f | wc -l");
  auto lines = Sh("grep -c . '" + tmp / "set/sha256.txt" + "'");
  EXPECT_EQ(files.out, lines.out);
  // Blob references match what the writer returned, for every member.
  if (std::filesystem::exists(tmp / "set/refs.txt")) {
    auto refs = testing::Run({"python3", "-c", kRefsScript, m.path(), tmp / "set/refs.txt"});
    EXPECT_EQ(refs.exit_code, 0) << refs.out << refs.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Interop, FixtureMountTest,
                         ::testing::Values("multi-shard", "groups", "zip64-forced",
                                           "infozip-pipe", "stream-written", "junk-prefix"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

class FreshMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    for (int i = 0; i < 40; ++i) {
      std::string rel = "d" + std::to_string(i % 4) + "/sub" + std::to_string(i % 3) + "/f" +
                        std::to_string(i) + ".bin";
      Put(rel, testing::RandomBytes(static_cast<size_t>(i) * 997 + (i % 5 == 0 ? 300000 : 1), i));
    }
    Put("empty.txt", "");
    Put("exec.sh", "#!/bin/sh\necho hi\n", 0755);
    Put("name with spaces & 'quotes'.txt", "odd name");
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 7);
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
    mount_ = std::make_unique<Mount>(std::vector<std::string>{tmp_ / "media"}, tmp_ / "mnt");
    ASSERT_TRUE(mount_->ok()) << mount_->result().err;
  }

  void Put(const std::string& rel, const std::string& content, mode_t mode = 0644) {
    std::string p = tmp_ / ("tree/" + rel);
    testing::WriteFile(p, content);
    ::chmod(p.c_str(), mode);
    struct timeval tv[2] = {{1600000000 + static_cast<time_t>(rel.size()) * 2, 0},
                            {1600000000 + static_cast<time_t>(rel.size()) * 2, 0}};
    ::utimes(p.c_str(), tv);
  }
  std::string Mnt(const std::string& rel = "") const { return mount_->path() + "/" + rel; }

  TempDir tmp_;
  std::unique_ptr<Mount> mount_;
};

TEST_F(FreshMountTest, DiffFindAndAttributes) {
  auto diff = testing::Run({"diff", "-r", tmp_ / "tree", mount_->path()});
  EXPECT_EQ(diff.exit_code, 0) << diff.out << diff.err;
  auto src_count = Sh("cd '" + tmp_ / "tree" + "' && find . | wc -l");
  auto mnt_count = Sh("cd '" + mount_->path() + "' && find . | wc -l");
  EXPECT_EQ(src_count.out, mnt_count.out);
  auto files = Sh("cd '" + tmp_ / "tree" + "' && find . -type f");
  size_t pos = 0;
  int checked = 0;
  while (pos < files.out.size()) {
    size_t nl = files.out.find('\n', pos);
    std::string rel = files.out.substr(pos + 2, nl - pos - 2);
    pos = nl + 1;
    struct stat s, m;
    ASSERT_EQ(::stat((tmp_ / ("tree/" + rel)).c_str(), &s), 0);
    ASSERT_EQ(::stat(Mnt(rel).c_str(), &m), 0) << rel;
    EXPECT_TRUE(S_ISREG(m.st_mode));
    EXPECT_EQ(m.st_size, s.st_size) << rel;
    EXPECT_EQ(m.st_mtime, s.st_mtime) << rel;
    EXPECT_EQ(m.st_mode & 07777, s.st_mode & 0555) << rel;
    EXPECT_EQ(m.st_uid, ::getuid());
    EXPECT_EQ(m.st_blocks, (s.st_size + 511) / 512);
    ++checked;
  }
  EXPECT_EQ(checked, 43);
  struct stat d;
  ASSERT_EQ(::stat(Mnt("d1").c_str(), &d), 0);
  EXPECT_TRUE(S_ISDIR(d.st_mode));
  EXPECT_EQ(d.st_mode & 07777, 0555u);
  struct stat missing;
  EXPECT_EQ(::stat(Mnt("d1/nope").c_str(), &missing), -1);
  EXPECT_EQ(errno, ENOENT);
  auto df = Sh("stat -f -c '%b %S %c' '" + mount_->path() + "'");
  EXPECT_EQ(df.exit_code, 0);
  auto mounts = Sh("grep ' " + mount_->path() + " ' /proc/mounts");
  EXPECT_NE(mounts.out.find("fuse.packfs ro,"), std::string::npos) << mounts.out;
}

TEST_F(FreshMountTest, XattrsAndStats) {
  std::string f = Mnt("d1/sub1/f1.bin");
  auto list = testing::Run({"getfattr", "-d", "-m", "-", f});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  for (const char* n : {"user.packfs.ref", "user.packfs.shard", "user.packfs.offset",
                        "user.packfs.size", "user.packfs.crc32"}) {
    EXPECT_NE(list.out.find(n), std::string::npos) << n << "\n" << list.out;
  }
  auto value = [&](const char* name) {
    return testing::Run({"getfattr", "--only-values", "-n", name, f}).out;
  };
  EXPECT_EQ(value("user.packfs.size"), std::to_string(997 + 1));
  EXPECT_TRUE(value("user.packfs.ref").starts_with("zip://d1/sub1/f1.bin::media/pack-"));
  // The shard path and offset let a loader read the bytes itself.
  std::string shard = value("user.packfs.shard");
  uint64_t offset = std::stoull(value("user.packfs.offset"));
  EXPECT_EQ(testing::ReadFile(shard).substr(offset, 998), testing::ReadFile(f));
  auto crc = Sh("python3 -c \"import zlib,sys; print('%08x' % zlib.crc32(open(sys.argv[1],'rb')"
                ".read()), end='')\" '" + f + "'");
  EXPECT_EQ(value("user.packfs.crc32"), crc.out);
  // Size probe with size 0, then ERANGE with a short buffer.
  ssize_t need = ::getxattr(f.c_str(), "user.packfs.ref", nullptr, 0);
  EXPECT_GT(need, 10);
  char small[4];
  EXPECT_EQ(::getxattr(f.c_str(), "user.packfs.ref", small, sizeof small), -1);
  EXPECT_EQ(errno, ERANGE);
  EXPECT_EQ(::getxattr(f.c_str(), "user.other", nullptr, 0), -1);
  EXPECT_EQ(errno, ENODATA);
  const nlohmann::json stats = testing::MountStats(mount_->path());
  EXPECT_GT(stats["requests"]["read"], 0) << stats;
  EXPECT_GT(stats["bytes_served"], 0) << stats;
  EXPECT_GE(stats["open_shards"], 1) << stats;
  EXPECT_LE(stats["open_shards"], stats["shards"]) << stats;
}

TEST_F(FreshMountTest, EveryWriteFailsWithEROFS) {
  std::string f = Mnt("empty.txt");
  auto expect_erofs = [](int rc, const char* what) {
    EXPECT_EQ(rc, -1) << what;
    EXPECT_EQ(errno, EROFS) << what;
  };
  expect_erofs(::open(f.c_str(), O_WRONLY), "open O_WRONLY");
  expect_erofs(::open(f.c_str(), O_RDWR), "open O_RDWR");
  expect_erofs(::open(f.c_str(), O_RDONLY | O_TRUNC), "open O_TRUNC");
  expect_erofs(::creat(Mnt("new.txt").c_str(), 0644), "creat");
  expect_erofs(::mkdir(Mnt("newdir").c_str(), 0755), "mkdir");
  expect_erofs(::unlink(f.c_str()), "unlink");
  expect_erofs(::rmdir(Mnt("d1").c_str()), "rmdir");
  expect_erofs(::rename(f.c_str(), Mnt("moved.txt").c_str()), "rename");
  expect_erofs(::symlink("x", Mnt("link").c_str()), "symlink");
  expect_erofs(::link(f.c_str(), Mnt("hard").c_str()), "link");
  expect_erofs(::setxattr(f.c_str(), "user.x", "1", 1, 0), "setxattr");
  expect_erofs(::removexattr(f.c_str(), "user.packfs.ref"), "removexattr");
  expect_erofs(::truncate(f.c_str(), 0), "truncate");
  expect_erofs(::chmod(f.c_str(), 0777), "chmod");
  expect_erofs(::chown(f.c_str(), 1, 1), "chown");
  expect_erofs(::utimes(f.c_str(), nullptr), "utimes");
  // Reading still works afterwards.
  EXPECT_EQ(testing::ReadFile(Mnt("name with spaces & 'quotes'.txt")), "odd name");
}

// Mount failures: a clear message, non-zero exit, nothing mounted.
class MountErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
    ASSERT_EQ(testing::Run({"cp", "-a", testing::FixturesDir() + "/interop/multi-shard", tmp_ / "good"})
                  .exit_code,
              0);
  }
  void ExpectFailure(const std::vector<std::string>& sources, const std::string& mnt,
                     const std::string& needle) {
    Mount m(sources, mnt);
    EXPECT_NE(m.result().exit_code, 0);
    EXPECT_NE(m.result().err.find(needle), std::string::npos)
        << "stderr: " << m.result().err;
    EXPECT_FALSE(testing::IsMounted(mnt));
  }
  TempDir tmp_;
};

TEST_F(MountErrorTest, MissingSource) { ExpectFailure({tmp_ / "nope"}, tmp_ / "mnt", "nope"); }

TEST_F(MountErrorTest, MountpointNotADirectory) {
  testing::WriteFile(tmp_ / "file", "x");
  Mount m({tmp_ / "good/media"}, tmp_ / "file");
  EXPECT_NE(m.result().exit_code, 0);
  EXPECT_NE(m.result().err.find("not a directory"), std::string::npos) << m.result().err;
  auto missing = Mount({tmp_ / "good/media"}, tmp_ / "no-such-dir");
  EXPECT_NE(missing.result().exit_code, 0);
  EXPECT_NE(missing.result().err.find("no-such-dir"), std::string::npos);
}

TEST_F(MountErrorTest, BusyMountpoint) {
  Mount first({tmp_ / "good/media"}, tmp_ / "mnt");
  ASSERT_TRUE(first.ok()) << first.result().err;
  Mount second({tmp_ / "good/media"}, tmp_ / "mnt");
  EXPECT_NE(second.result().exit_code, 0);
  EXPECT_NE(second.result().err.find("busy"), std::string::npos) << second.result().err;
  // Still exactly one mount, and it still answers.
  auto count = Sh("grep -c ' " + first.path() + " ' /proc/mounts");
  EXPECT_EQ(count.out, "1\n");
  EXPECT_TRUE(std::filesystem::exists(first.path() + "/img/0000.jpg"));
}

TEST_F(MountErrorTest, BrokenShard) {
  ASSERT_EQ(testing::Run({"cp", "-a", testing::FixturesDir() + "/interop/bad/truncated", tmp_ / "bad"})
                .exit_code,
            0);
  ExpectFailure({tmp_ / "bad/media"}, tmp_ / "mnt", "pack-0000.zip");
}

// The catalog lists a shard that is gone: the mount fails naming it (serving the rest would hide
// its members without a word), and says how to go on.
TEST_F(MountErrorTest, CatalogListsAMissingShard) {
  auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp_ / "good/media"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  ASSERT_EQ(::unlink((tmp_ / "good/media/pack-0002.zip").c_str()), 0);
  ExpectFailure({tmp_ / "good/media"}, tmp_ / "mnt", "media/pack-0002.zip (");
  ExpectFailure({tmp_ / "good/media"}, tmp_ / "mnt", "--forget-missing");
  // Ignoring the catalog serves what is there, as asked.
  Mount none({tmp_ / "good/media"}, tmp_ / "mnt", {"--catalog", "none"});
  EXPECT_TRUE(none.ok()) << none.result().err;
}

TEST_F(MountErrorTest, CollidingSources) {
  ASSERT_EQ(testing::Run({"cp", "-a", tmp_ / "good", tmp_ / "copy"}).exit_code, 0);
  ExpectFailure({tmp_ / "good/media", tmp_ / "copy/media"}, tmp_ / "mnt", "img/0000.jpg");
  Mount last({tmp_ / "good/media", tmp_ / "copy/media"}, tmp_ / "mnt",
             {"--on-collision", "last"});
  ASSERT_TRUE(last.ok()) << last.result().err;
  auto shard = testing::Run({"getfattr", "--only-values", "-n", "user.packfs.shard",
                    last.path() + "/img/0000.jpg"});
  EXPECT_NE(shard.out.find("/copy/media/"), std::string::npos) << shard.out;
}

TEST(PackfsCliTest, VersionAndHelp) {
  auto v = testing::Run({testing::PackfsPath(), "--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("packfs " PACKFS_VERSION " (git "), std::string::npos) << v.out;
  auto h = testing::Run({testing::PackfsPath(), "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--on-collision"), std::string::npos);
  auto none = testing::Run({testing::PackfsPath()});
  EXPECT_NE(none.exit_code, 0);
  auto one = testing::Run({testing::PackfsPath(), "/tmp"});
  EXPECT_NE(one.exit_code, 0);
  EXPECT_NE(one.err.find("SOURCE"), std::string::npos) << one.err;
}

}  // namespace
}  // namespace packfs

namespace packfs {
namespace {

// The same tree served from a catalog file (mkpack catalog) and with --catalog none.
TEST(CatalogModeTest, CatalogFileAndNoneServeTheSameTree) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  testing::TempDir tmp;
  for (int i = 0; i < 30; ++i) {
    testing::WriteFile(tmp / ("tree/dir" + std::to_string(i % 3) + "/f" + std::to_string(i)),
                       testing::RandomBytes(1000 + static_cast<size_t>(i) * 100, i));
  }
  testing::MakePythonPack(tmp / "tree", tmp / "media", 8);
  auto cat = testing::Run({testing::MkpackPath(), "catalog", tmp / "media"});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  ASSERT_TRUE(std::filesystem::exists(tmp / "media/.packfs-catalog.sqlite"));
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, std::vector<std::string>{"--catalog", "none"},
        std::vector<std::string>{"--catalog", tmp / "media/.packfs-catalog.sqlite"}}) {
    testing::Mount m({tmp / "media"}, tmp / "mnt", args);
    ASSERT_TRUE(m.ok()) << m.result().err;
    auto diff = testing::Run({"diff", "-r", tmp / "tree", m.path()});
    EXPECT_EQ(diff.exit_code, 0) << diff.out;
  }
}

// Large directories list whole and in catalog order, each entry once, also while several
// readers list them at once on a fresh mount: every part after a listing's first is read ahead
// while the kernel takes in the one before (fuse/listing_ahead.h), and the requests for them are
// answered from it (`listing_ahead` in the stats attribute).
TEST(ListingTest, LargeDirectoriesListWholeWhileListedAtOnce) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  testing::TempDir tmp;
  constexpr int kDirs = 4;
  constexpr int kFiles = 1500;  // several READDIRPLUS replies each
  std::vector<std::vector<std::string>> want(kDirs);
  for (int d = 0; d < kDirs; ++d) {
    for (int i = 0; i < kFiles; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "file-%05d.bin", i);
      want[d].push_back(name);
      testing::WriteFile(tmp / ("tree/d" + std::to_string(d) + "/" + name), "x");
    }
  }
  testing::MakePythonPack(tmp / "tree", tmp / "media", 2000);
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  testing::Mount m({tmp / "media"}, tmp / "mnt");
  ASSERT_TRUE(m.ok()) << m.result().err;
  // Two readers a directory, all eight at once.
  std::vector<std::vector<std::string>> got(2 * kDirs);
  std::vector<std::thread> readers;
  for (int r = 0; r < 2 * kDirs; ++r) {
    readers.emplace_back([&, r] {
      DIR* dir = ::opendir((m.path() + "/d" + std::to_string(r % kDirs)).c_str());
      if (dir == nullptr) return;
      while (const dirent* e = ::readdir(dir)) {
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
          got[r].push_back(e->d_name);
        }
      }
      ::closedir(dir);
    });
  }
  for (auto& t : readers) t.join();
  for (int r = 0; r < 2 * kDirs; ++r) EXPECT_EQ(got[r], want[r % kDirs]) << "reader " << r;
  const nlohmann::json ahead = testing::MountStats(m.path())["listing_ahead"];
  EXPECT_GE(ahead["used"].get<uint64_t>(), 1u) << ahead.dump();
  EXPECT_LE(ahead["used"].get<uint64_t>(), ahead["kept"].get<uint64_t>()) << ahead.dump();
}

// The mount's kernel read-ahead (fuse/read_ahead.h): 512 KiB by default, so a sequential
// reader of an 8 MiB file is served in READs of about 512 KiB, not 128 KiB ones (raised as root:
// sysfs needs it); -o read_ahead=SIZE sets it, to less than 128 KiB without root too.
class ReadAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    testing::WriteFile(tmp_ / "tree/big.bin", big_);
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 1);
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
  }
  // The mount's read_ahead_kb once it has answered a request, and the READs that reading big.bin
  // through it took (its bytes checked).
  void MountAndRead(const std::vector<std::string>& args, std::string* ra_kb,
                    unsigned long* reads) {
    testing::Mount m({tmp_ / "media"}, tmp_ / "mnt", args);
    ASSERT_TRUE(m.ok()) << m.result().err;
    struct stat st;
    ASSERT_EQ(::stat((tmp_ / "mnt/big.bin").c_str(), &st), 0);
    Result<std::string> dev = MountDevice(m.path());
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    *ra_kb = testing::ReadFile("/sys/class/bdi/" + *dev + "/read_ahead_kb");
    const auto count = [&] {
      return testing::MountStats(m.path())["requests"]["read"].get<unsigned long>();
    };
    const unsigned long before = count();
    EXPECT_EQ(testing::ReadFile(tmp_ / "mnt/big.bin"), big_);
    *reads = count() - before;
  }
  testing::TempDir tmp_;
  const std::string big_ = testing::RandomBytes(8 << 20, 3);
};

TEST_F(ReadAheadTest, ASequentialReaderIsServedHalfAMebibyteAtATime) {
  if (::geteuid() != 0) GTEST_SKIP() << "the read-ahead is raised as root only";
  std::string ra;
  unsigned long reads = 0;
  ASSERT_NO_FATAL_FAILURE(MountAndRead({}, &ra, &reads));
  EXPECT_EQ(ra, "512\n");
  // 16 or 17 READs of 512 KiB, and a few more where the kernel's window starts small; 64 at
  // 128 KiB.
  EXPECT_GE(reads, 16u);
  EXPECT_LE(reads, 24u);
}

TEST_F(ReadAheadTest, TheOptionSetsItLargerAsRootAndSmallerAlways) {
  std::string ra;
  unsigned long reads = 0;
  ASSERT_NO_FATAL_FAILURE(MountAndRead({"-o", "read_ahead=64K"}, &ra, &reads));
  EXPECT_EQ(ra, "64\n");
  EXPECT_GE(reads, 128u);  // 8 MiB in READs of at most 64 KiB
  if (::geteuid() != 0) GTEST_SKIP() << "the read-ahead is raised as root only";
  ASSERT_NO_FATAL_FAILURE(MountAndRead({"-o", "read_ahead=2M"}, &ra, &reads));
  EXPECT_EQ(ra, "2048\n");
  // READs of max_read (1 MiB, or 1008 KiB where a pipe holds no more), two at a time.
  EXPECT_LE(reads, 16u);
}

}  // namespace
}  // namespace packfs
