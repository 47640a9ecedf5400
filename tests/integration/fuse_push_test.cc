// Pushing a read's neighbours into the kernel's page cache (fuse/push.h), through real mounts:
// after a listing, once a directory is past its first 15%, reading one file brings the files
// that follow it in the shard, and reading those sends no READ; a pass that reads a sample of a
// directory pushes nothing; by path with -o nolist nothing is pushed; -o nopush turns it off; a
// neighbour whose bytes fail their CRC-32 is never pushed; a lookup's prefetch takes the shard past
// the file only once the directory is warm; pushing pauses while pushed files are evicted before
// their read; a directory read through by path is streamed into the page cache (and not with
// -o nostream, nor for a sample). Request counts come from user.packfs.stats. On a network file
// system a walk in shard order leaves the hint to the kernel's read-ahead. A file looked up just
// before a neighbour's read is not pushed (its own READ is coming); one statted long before is.
// Shards on a network file system push nothing, and a file read there after a listing gets the
// lookup's hint at its first READ. Once a directory is past its first 15% after a listing, a walk
// pushes the rest of it (each file once, never a damaged one); -o nowalk leaves pushing to the
// reads, as the tests of the reads' own pushes mount. By path, a directory past its first 15% is
// listed by the mount itself (fuse/dir_lister.h), then walked: the rest of it costs no LOOKUP and
// no READ; -o nolist leaves the lookups to the readers; a mount stacked over is never listed; an
// unmount or a SIGTERM during a listing ends the mount.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/read/filesystem.h"
#include "core/read/pack_set.h"
#include "core/read/payoff.h"
#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::SettledPush;
using testing::TempDir;

constexpr int kFiles = 80;
constexpr uint64_t kWindow = 256 * 1024;  // the tests mount with -o push=256K
// Files of d/ read before pushing starts: 15% of its 80 (Pusher::kPushAfterPercent).
constexpr int kWarmup = 12;
const std::vector<std::string> kPush = {"-o", "push=256K"};
// The reads' own pushes, without the walk of a ready directory.
const std::vector<std::string> kReadsPush = {"-o", "push=256K,nowalk"};
// By path as the kernel meets it without a listing: the mount does not list a ready directory.
const std::vector<std::string> kPushNolist = {"-o", "push=256K,nolist"};

std::string Name(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "d/%04d.bin", i);
  return buf;
}

using testing::MountStats;

uint64_t Reads(const std::string& mnt) {
  return MountStats(mnt)["requests"]["read"].get<uint64_t>();
}

// READs so far, and pushed files read again through a READ (push.reread).
struct ReadCount {
  uint64_t reads = 0;
  int rereads = 0;
};
ReadCount CountReads(const std::string& mnt) {
  const nlohmann::json s = MountStats(mnt);
  return {s["requests"]["read"].get<uint64_t>(), s["push"]["reread"].get<int>()};
}

// Pushed files whose pages were gone by their read: on these machines the host pages out memory
// it judges idle (DAMON, by physical region: a page pushed into a region idle for a minute may go
// within seconds; seen: 2 of 68 freshly pushed files, once in about 100 runs under ctest -j2).
// Such a file is read through a READ and counted as a reread; a few are allowed.
constexpr int kDroppedByHost = 3;

// Expects `expected` READs since `before` and none else but rereads (at most kDroppedByHost): a
// push that did not land shows as a READ that is not a reread.
void ExpectReadsSince(const std::string& mnt, const ReadCount& before, uint64_t expected,
                      const std::string& what) {
  const ReadCount now = CountReads(mnt);
  const int rereads = now.rereads - before.rereads;
  EXPECT_GE(now.reads, before.reads + expected) << what;
  EXPECT_LE(now.reads - before.reads - expected, static_cast<uint64_t>(std::max(rereads, 0)))
      << what;
  EXPECT_LE(rereads, kDroppedByHost) << what;
}

// Waits (up to 5 s) until `dirs` directory walks have started, then until the pushes settle: a
// walk runs on a thread of its own, which may not have begun when the read that readied its
// directory returns.
nlohmann::json WalkedPush(const std::string& mnt, int dirs) {
  for (int i = 0; i < 100; ++i) {
    if (MountStats(mnt)["push"]["walked_dirs"].get<int>() >= dirs) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return SettledPush(mnt);
}

void List(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
  EXPECT_GT(n, 0u) << dir;
}

// Packs tmp/src into tmp/outer-src/inner, and tmp/outer-src into tmp/outer: a mount of the outer
// set shows the inner set's shard and catalog as files on FUSE, a network file system to packfs.
// False (with the failure reported) when mkpack fails.
bool PackNested(const TempDir& tmp) {
  auto inner = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp / "src",
                             tmp / "outer-src/inner"});
  EXPECT_EQ(inner.exit_code, 0) << inner.err;
  auto outer = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp / "outer-src",
                             tmp / "outer"});
  EXPECT_EQ(outer.exit_code, 0) << outer.err;
  return inner.exit_code == 0 && outer.exit_code == 0;
}

// Where each member of a pack set lies: key -> (data offset, size), from `mkpack ls --json`.
std::map<std::string, std::pair<uint64_t, uint64_t>> Extents(const std::string& set) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> at;
  auto ls = testing::Run({testing::MkpackPath(), "ls", "--json", set});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  std::istringstream in(ls.out);
  for (std::string line; std::getline(in, line);) {
    auto m = nlohmann::json::parse(line);
    at[m["key"]] = {m["offset"].get<uint64_t>(), m["size"].get<uint64_t>()};
  }
  return at;
}

class FusePushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    for (int i = 0; i < kFiles; ++i) {
      files_.push_back(testing::RandomBytes(4096 + static_cast<size_t>(i * 7919) % 16384, i + 1));
      testing::WriteFile(tmp_ / ("src/" + Name(i)), files_.back());
    }
    testing::WriteFile(tmp_ / "src/e/next-dir.bin", testing::RandomBytes(5000, 999));
    auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp_ / "src",
                              tmp_ / "media"});
    ASSERT_EQ(pack.exit_code, 0) << pack.err;
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
    // Where each member's data lies: the files a read of d/0000.bin pushes are those that end
    // within kWindow of its first byte.
    at_ = Extents(tmp_ / "media");
    auto& at = at_;
    const uint64_t start = at[Name(0)].first;
    for (int i = 1; i < kFiles; ++i) {
      const auto [off, size] = at[Name(i)];
      if (off + size - start > kWindow) break;
      ++in_window_;
    }
    ASSERT_GT(in_window_, 3);
    ASSERT_LT(in_window_ + kWarmup, kFiles - 1);
  }
  // Reads the last kWarmup files of d/ (far from d/0000.bin): the directory is then past the
  // part of it read before pushing starts.
  void WarmUp(const std::string& mnt) {
    for (int i = kFiles - kWarmup; i < kFiles; ++i) {
      EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
    }
  }

  TempDir tmp_;
  std::vector<std::string> files_;
  int in_window_ = 0;  // files after d/0000.bin within the push window
  std::map<std::string, std::pair<uint64_t, uint64_t>> at_;  // key -> data offset, size
};

// The shard's pages in [from, to) that are in the page cache (mincore), after dropping them all
// first when `drop` is set.
size_t ResidentPages(const std::string& shard, uint64_t from, uint64_t to, bool drop = false) {
  const int fd = ::open(shard.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << shard;
  if (fd < 0) return 0;
  if (drop) {
    ::fdatasync(fd);
    EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  }
  struct stat st;
  ::fstat(fd, &st);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  EXPECT_NE(map, MAP_FAILED);
  if (map == MAP_FAILED) return 0;
  std::vector<unsigned char> vec((static_cast<size_t>(st.st_size) + page - 1) / page);
  EXPECT_EQ(::mincore(map, static_cast<size_t>(st.st_size), vec.data()), 0);
  ::munmap(map, static_cast<size_t>(st.st_size));
  size_t n = 0;
  for (uint64_t p = from / page; p < (to + page - 1) / page && p < vec.size(); ++p) n += vec[p] & 1;
  return n;
}

TEST_F(FusePushTest, AfterAListingTheFollowersOfAReadComeWithoutRequests) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kReadsPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  List(mnt + "/d");
  WarmUp(mnt);
  EXPECT_EQ(SettledPush(mnt)["files"].get<int>(), 0) << "pushed before the directory was warm";
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(0)), files_[0]);
  nlohmann::json push = SettledPush(mnt);
  EXPECT_EQ(push["files"].get<int>(), in_window_) << push;
  EXPECT_EQ(push["unknown_inode"].get<int>(), 0) << push;
  EXPECT_EQ(push["failed"].get<int>(), 0) << push;
  const ReadCount reads = CountReads(mnt);
  for (int i = 1; i <= in_window_; ++i) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
  }
  ExpectReadsSince(mnt, reads, 0, "pushed files were read through requests");
  // The first file past the window is read through a request, and it pushes its own followers.
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(in_window_ + 1)), files_[in_window_ + 1]);
  ExpectReadsSince(mnt, reads, 1, "the first file past the window");
  EXPECT_GT(SettledPush(mnt)["files"].get<int>(), in_window_);
  EXPECT_EQ(SettledPush(mnt)["paused"].get<int>(), 0);
}

TEST_F(FusePushTest, AReadyDirectoryIsWalkedAfterAListing) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  List(mnt + "/d");
  List(mnt + "/e");
  WarmUp(mnt);  // d/ is ready: the walk pushes the rest of it, and nothing of e/
  nlohmann::json push = WalkedPush(mnt, 1);
  EXPECT_EQ(push["walked_dirs"].get<int>(), 1) << push;
  EXPECT_EQ(push["files"].get<int>(), kFiles - kWarmup) << push;
  EXPECT_EQ(push["unknown_inode"].get<int>(), 0) << push;
  EXPECT_EQ(push["failed"].get<int>(), 0) << push;
  const ReadCount reads = CountReads(mnt);
  for (int i = 0; i < kFiles - kWarmup; ++i) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
  }
  ExpectReadsSince(mnt, reads, 0, "walked files were read through requests");
  EXPECT_EQ(testing::ReadFile(mnt + "/e/next-dir.bin"), testing::RandomBytes(5000, 999));
  ExpectReadsSince(mnt, reads, 1, "e/'s file");
}

TEST_F(FusePushTest, OptionNowalkLeavesPushingToTheReads) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kReadsPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  List(mnt + "/d");
  WarmUp(mnt);
  nlohmann::json push = SettledPush(mnt);
  EXPECT_EQ(push["walked_dirs"].get<int>(), 0) << push;
  EXPECT_EQ(push["files"].get<int>(), 0) << push;
}

TEST_F(FusePushTest, ASampleOfADirectoryPushesNothing) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  List(mnt + "/d");
  // A tenth of the directory, spread over it, as a pass over a sample of a data set reads.
  uint64_t reads = Reads(mnt);
  for (int i = 3; i < kFiles; i += 10) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
  }
  EXPECT_EQ(SettledPush(mnt)["files"].get<int>(), 0);
  EXPECT_EQ(SettledPush(mnt)["walked_dirs"].get<int>(), 0);
  EXPECT_EQ(SettledPush(mnt)["listed_dirs"].get<int>(), 0);
  EXPECT_GE(Reads(mnt), reads + kFiles / 10);
  EXPECT_EQ(MountStats(mnt)["dir_stream"]["extents"].get<int>(), 0);  // nor streamed
}

TEST_F(FusePushTest, ADirectoryReadThroughByPathIsStreamedIntoThePageCache) {
  // Once a directory is past its first 15%, the rest of its extent is read into the page cache
  // ahead of the reads (core/read/dir_stream.h); -o nostream leaves it to the lookups' hints.
  const std::string shard = tmp_ / "media/pack-0000.zip";
  // d/'s files between the warm-up's hints: the 1st to the 40th.
  const uint64_t from = (at_[Name(1)].first + 4095) / 4096 * 4096;
  const uint64_t to = at_[Name(40)].first + at_[Name(40)].second;
  const size_t pages = (to + 4095) / 4096 - from / 4096;  // as ResidentPages counts them
  for (const bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "streamed" : "-o nostream");
    std::vector<std::string> opts = kPushNolist;  // listed, the walk would read d/ as well
    if (!stream) opts.insert(opts.end(), {"-o", "nostream"});
    Mount mount({tmp_ / "media"}, tmp_ / "mnt", opts);
    ASSERT_TRUE(mount.ok()) << mount.result().err;
    const std::string mnt = mount.path();
    ResidentPages(shard, 0, 0, /*drop=*/true);
    ASSERT_EQ(ResidentPages(shard, from, to), 0u);
    WarmUp(mnt);  // by path: the last 12 files
    struct stat st;  // the next lookup finds the directory past its first 15%
    ASSERT_EQ(::stat((mnt + "/" + Name(60)).c_str(), &st), 0);
    size_t resident = 0;
    int extents = 0;
    for (int i = 0; i < 40; ++i) {
      // Pages first: the stream counts its extent before reading it in, so pages it brought are
      // never seen with the count still 0 (the other order raced a stream that began and
      // finished between the two looks, seen once under ASan).
      resident = ResidentPages(shard, from, to);
      extents = MountStats(mnt)["dir_stream"]["extents"].get<int>();
      if (resident * 10 >= pages * 9) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (stream) {
      EXPECT_EQ(extents, 1);
      // All of it was read in; a page or two may already be gone again when tests running
      // beside this one fill the page cache (seen: 124 of 125 under ctest -j2).
      EXPECT_GE(resident * 10, pages * 9) << resident << " of " << pages;
      EXPECT_GE(MountStats(mnt)["dir_stream"]["bytes"].get<uint64_t>(), to - from);
    } else {
      EXPECT_EQ(extents, 0);
      EXPECT_LT(resident, pages / 2);
    }
    for (int i = 0; i < kFiles; i += 7) {  // and the bytes are right
      EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
    }
  }
}

TEST_F(FusePushTest, ByPathWithNolistNothingIsPushedAndTheDirectoryBoundaryHolds) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPushNolist);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  // No listing: the kernel holds no inode of the neighbours, so none is pushed (or tried), by
  // the reads or by the walk of the ready directory.
  WarmUp(mnt);
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(0)), files_[0]);
  nlohmann::json push = WalkedPush(mnt, 1);
  EXPECT_EQ(push["walked_dirs"].get<int>(), 1) << push;
  EXPECT_EQ(push["files"].get<int>(), 0) << push;
  EXPECT_EQ(push["unknown_inode"].get<int>(), 0) << push;
  uint64_t reads = Reads(mnt);
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(1)), files_[1]);
  EXPECT_EQ(Reads(mnt), reads + 1);
  // The last file of d/ is followed in the shard by e/'s file, listed or not: never pushed.
  List(mnt + "/e");
  List(mnt + "/d");
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(kFiles - 1)), files_[kFiles - 1]);  // cached
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(kFiles - kWarmup - 1)),
            files_[kFiles - kWarmup - 1]);
  EXPECT_EQ(SettledPush(mnt)["files"].get<int>(), 0);
  reads = Reads(mnt);
  testing::ReadFile(mnt + "/e/next-dir.bin");
  EXPECT_EQ(Reads(mnt), reads + 1);
}

uint64_t Lookups(const std::string& mnt) {
  return MountStats(mnt)["requests"]["lookup"].get<uint64_t>();
}

// Waits (up to 5 s) until `dirs` directories have been listed by the mount (or failed to be).
void WaitListed(const std::string& mnt, int dirs) {
  for (int i = 0; i < 100; ++i) {
    nlohmann::json p = MountStats(mnt)["push"];
    if (p["listed_dirs"].get<int>() + p["list_failed"].get<int>() >= dirs) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST_F(FusePushTest, ByPathAReadyDirectoryIsListedThenWalked) {
  // No listing by the program: once d/ is past its first 15%, the mount lists it itself
  // (fuse/dir_lister.h), so the kernel holds every file of it; the walk then pushes the rest,
  // and reading them by path sends neither a LOOKUP nor a READ. e/ is not touched.
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  WarmUp(mnt);
  WaitListed(mnt, 1);
  nlohmann::json push = WalkedPush(mnt, 1);
  EXPECT_EQ(push["listed_dirs"].get<int>(), 1) << push;
  EXPECT_EQ(push["list_failed"].get<int>(), 0) << push;
  EXPECT_EQ(push["walked_dirs"].get<int>(), 1) << push;
  EXPECT_EQ(push["files"].get<int>(), kFiles - kWarmup) << push;
  EXPECT_EQ(push["failed"].get<int>(), 0) << push;
  const ReadCount reads = CountReads(mnt);
  const uint64_t lookups = Lookups(mnt);
  for (int i = 0; i < kFiles - kWarmup; ++i) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
  }
  EXPECT_EQ(Lookups(mnt), lookups) << "files of a listed directory were looked up";
  ExpectReadsSince(mnt, reads, 0, "walked files were read through requests");
  EXPECT_EQ(testing::ReadFile(mnt + "/e/next-dir.bin"), testing::RandomBytes(5000, 999));
  EXPECT_EQ(Lookups(mnt), lookups + 2);  // e, then its file
  ExpectReadsSince(mnt, reads, 1, "e/'s file");
  WaitListed(mnt, 2);  // e/ is read through too: its only file
  EXPECT_EQ(SettledPush(mnt)["listed_dirs"].get<int>(), 2);
  // The listing's directory was closed again: the mount unmounts at once.
  EXPECT_EQ(mount.Unmount().exit_code, 0);
}

TEST_F(FusePushTest, OptionNolistLeavesTheLookupsToTheReaders) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPushNolist);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  WarmUp(mnt);
  nlohmann::json push = WalkedPush(mnt, 1);
  EXPECT_EQ(push["listed_dirs"].get<int>(), 0) << push;
  EXPECT_EQ(push["files"].get<int>(), 0) << push;  // nothing known to push into
  const uint64_t lookups = Lookups(mnt);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files_[i]) << Name(i);
  }
  EXPECT_EQ(Lookups(mnt), lookups + 5);
}

TEST_F(FusePushTest, AMountStackedOverIsNeverListed) {
  // The readers reach d/ through a descriptor opened before a tmpfs was mounted over the
  // mountpoint: the mount cannot reach itself there any more, sees that it is not its own
  // mount (no stats naming its process), lists nothing, and serves the reads as before.
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  const int dir = ::open((mnt + "/d").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  const int root = ::open(mnt.c_str(), O_RDONLY | O_DIRECTORY);  // for its stats
  ASSERT_GE(root, 0);
  auto over = testing::Run({"mount", "-t", "tmpfs", "-o", "size=1M", "stacked", mnt});
  ASSERT_EQ(over.exit_code, 0) << over.err;
  struct Unstack {  // the tmpfs goes first, whatever fails below
    std::string at;
    int fds[2];
    ~Unstack() {
      for (int fd : fds) ::close(fd);
      testing::Run({"umount", at});
    }
  } unstack{mnt, {dir, root}};
  auto read_at = [dir](const std::string& name) {
    std::string out;
    const int fd = ::openat(dir, name.c_str(), O_RDONLY);
    if (fd < 0) return out;
    char buf[8192];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return out;
  };
  for (int i = 0; i < kFiles; i += 3) {  // past the first 15%, and more
    EXPECT_EQ(read_at(Name(i).substr(2)), files_[i]) << Name(i);
  }
  // The stats through a descriptor (the root is covered).
  std::string stats(1 << 16, '\0');
  nlohmann::json push;
  for (int i = 0; i < 100; ++i) {
    const ssize_t n = ::fgetxattr(root, "user.packfs.stats", stats.data(), stats.size());
    ASSERT_GT(n, 0);
    push = nlohmann::json::parse(stats.substr(0, static_cast<size_t>(n)))["push"];
    if (push["list_failed"].get<int>() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(push["list_failed"].get<int>(), 1) << push;
  EXPECT_EQ(push["listed_dirs"].get<int>(), 0) << push;
  for (int i = 1; i < kFiles; i += 3) {
    EXPECT_EQ(read_at(Name(i).substr(2)), files_[i]) << Name(i);
  }
}

// A listing of a large directory takes a while (tens of ms for 20,000 entries); as root it goes
// through a detached clone of the mount (open_tree), so an unmount made while it runs is not
// refused as busy, and the daemon still ends. A SIGTERM while it runs ends the daemon too (its
// workers stop answering, and may drop the listing's request: the unmount's close of /dev/fuse
// ends it; before, a SIGTERM with readers running hung the daemon in 1 of 12 runs).
TEST(FuseListTest, AnUnmountOrSigtermDuringAListingEndsTheMount) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  if (::geteuid() != 0) GTEST_SKIP() << "the clone of the mount needs CAP_SYS_ADMIN";
  TempDir tmp;
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "src/big/%05d", i);
    testing::WriteFile(tmp / name, "x");
  }
  auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp / "src",
                            tmp / "media"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  auto read_until_ready = [&](const std::string& mnt) {
    for (int i = 0; i < kN * 15 / 100 + 1; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "/big/%05d", i * 6);  // spread: no follower is pushed
      ASSERT_EQ(testing::ReadFile(mnt + name), "x") << name;
    }
  };
  {  // The directory is listed once past its first 15%.
    Mount mount({tmp / "media"}, tmp / "mnt");
    ASSERT_TRUE(mount.ok()) << mount.result().err;
    read_until_ready(mount.path());
    WaitListed(mount.path(), 1);
    EXPECT_EQ(SettledPush(mount.path())["listed_dirs"].get<int>(), 1);
  }
  Mount mount({tmp / "media"}, tmp / "mnt");
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  read_until_ready(mount.path());
  // At once, one attempt: the listing just began.
  auto un = testing::Run({"fusermount3", "-u", mount.path()});
  EXPECT_EQ(un.exit_code, 0) << un.err;
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !testing::IsMounted(mount.path()) &&
           testing::Sh("pgrep -f 'packfs .*" + tmp / "mnt" + "$'").out.empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "the daemon did not end after the unmount";

  testing::ForegroundPackfs p({"-f", tmp / "media", tmp / "mnt"}, tmp / "stderr.txt");
  ASSERT_TRUE(testing::WaitMounted(tmp / "mnt", true)) << testing::ReadFile(tmp / "stderr.txt");
  read_until_ready(tmp / "mnt");
  ASSERT_EQ(::kill(p.pid(), SIGTERM), 0);  // at once: the listing just began
  const int status = p.Wait(20);
  EXPECT_NE(status, -1) << "packfs did not end on SIGTERM during a listing";
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_FALSE(testing::IsMounted(tmp / "mnt"));
}

TEST_F(FusePushTest, AFileLookedUpJustBeforeANeighboursReadIsNotPushed) {
  // By path with several readers, the neighbours a read finds looked up are the files the other
  // readers are about to READ: pushing them races those READs (fuse/push.h). (Not listed: the
  // listing of the ready directory would give the kernel those files too.)
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPushNolist);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  WarmUp(mnt);  // by path: d/ past its first 15%
  struct stat st;
  for (int i = 1; i <= in_window_; ++i) {  // looked up, as by readers about to read them
    ASSERT_EQ(::stat((mnt + "/" + Name(i)).c_str(), &st), 0) << Name(i);
  }
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(0)), files_[0]);
  nlohmann::json push = SettledPush(mnt);
  EXPECT_EQ(push["files"].get<int>(), 0) << push;
  EXPECT_EQ(push["reads"].get<int>(), 0) << push;
  const uint64_t reads = Reads(mnt);
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(1)), files_[1]);
  EXPECT_EQ(Reads(mnt), reads + 1);
}

// A loader that stats every file of a directory by path before reading them: files looked up
// more than Pusher::kFreshLookups lookups before are pushed as after a listing.
TEST(FusePushLookupTest, FilesStattedLongBeforeTheirReadArePushed) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  TempDir tmp;
  constexpr int kN = 320;  // kFreshLookups (256) + the files read first
  std::vector<std::string> files;
  for (int i = 0; i < kN; ++i) {
    files.push_back(testing::RandomBytes(4096 + static_cast<size_t>(i * 7919) % 8192, i + 7));
    testing::WriteFile(tmp / ("src/" + Name(i)), files.back());
  }
  auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp / "src",
                            tmp / "media"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  Mount mount({tmp / "media"}, tmp / "mnt", kReadsPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  struct stat st;
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(::stat((mnt + "/" + Name(i)).c_str(), &st), 0) << Name(i);
  }
  // Past the directory's first 15%, by reading its last files.
  for (int i = kN - kN * 16 / 100; i < kN; ++i) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
  }
  EXPECT_EQ(SettledPush(mnt)["files"].get<int>(), 0);
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(0)), files[0]);
  nlohmann::json push = SettledPush(mnt);
  EXPECT_GT(push["files"].get<int>(), 3) << push;
  const int pushed = push["files"].get<int>();
  const ReadCount reads = CountReads(mnt);
  for (int i = 1; i <= pushed; ++i) {
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
  }
  ExpectReadsSince(mnt, reads, 0, "pushed files were read through requests");
}

TEST_F(FusePushTest, ALookupPrefetchesTheShardPastTheFileOnlyOnceTheDirectoryIsWarm) {
  // A lookup hints the file's bytes into the page cache; past a directory's first 15% the hint
  // takes 128 KiB of the shard from the file on (its neighbours, which an epoch reads next), and
  // before that exactly the file (a sample pass would read the span for nothing).
  // Without streaming: a directory streamed whole gives no hint at all (the streaming test
  // above covers that), and the warm-up may start one before the pages are dropped below.
  // Without listing: a listed directory's files need no LOOKUP, so the stat below would send
  // none once the listing (which races it) is done.
  std::vector<std::string> opts = kPushNolist;
  opts.insert(opts.end(), {"-o", "nostream"});
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", opts);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  const std::string shard = tmp_ / "media/pack-0000.zip";
  // Pages of the shard from the end of file i's page to 64 KiB on (its followers).
  auto after = [&](int i) {
    const auto [off, size] = at_[Name(i)];
    const uint64_t from = (off + size + 4095) / 4096 * 4096 + 4096;
    return std::make_pair(from, from + (64 << 10));
  };
  // Waits up to 2 s for pages of [from, to) to come in; returns how many did.
  auto resident = [&](std::pair<uint64_t, uint64_t> r) {
    size_t n = 0;
    for (int i = 0; i < 40 && n == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      n = ResidentPages(shard, r.first, r.second);
    }
    return n;
  };
  struct stat st;
  ResidentPages(shard, 0, 0, /*drop=*/true);
  ASSERT_EQ(::stat((mnt + "/" + Name(20)).c_str(), &st), 0);
  // The file itself comes in (the hint works at all) ...
  const auto [off20, size20] = at_[Name(20)];
  size_t own = 0;
  for (int i = 0; i < 40 && own == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    own = ResidentPages(shard, off20, off20 + size20);
  }
  EXPECT_GT(own, 0u) << "the lookup did not prefetch the file";
  // ... and nothing past it while the directory is cold.
  EXPECT_EQ(resident(after(20)), 0u) << "a cold directory's lookup read past the file";
  WarmUp(mnt);
  ResidentPages(shard, 0, 0, /*drop=*/true);
  ASSERT_EQ(::stat((mnt + "/" + Name(30)).c_str(), &st), 0);
  EXPECT_GT(resident(after(30)), 0u) << "a warm directory's lookup did not read past the file";
}

TEST_F(FusePushTest, AShardOnAFuseMountCountsAsNetworkStorage) {
  // Where the lookup's span is always taken (core/read/filesystem.cc): a FUSE file system (sshfs,
  // rclone, s3fs) is network storage, the test's own temporary directory is not.
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  EXPECT_TRUE(OnNetworkFilesystem(mount.path()));
  EXPECT_TRUE(OnNetworkFilesystem(mount.path() + "/d"));
  EXPECT_FALSE(OnNetworkFilesystem(tmp_ / "media"));
  EXPECT_FALSE(OnNetworkFilesystem(tmp_ / "no such dir"));
}

// Drops the page cache of a file of the mount (its pushed pages too), as memory pressure would.
void Evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << path;
  EXPECT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0) << path;
  ::close(fd);
}

TEST_F(FusePushTest, PushingPausesWhilePushedFilesAreEvictedBeforeTheirRead) {
  // 400 files of 3,000 bytes in t/: a 256 KiB push brings about 85 of them.
  constexpr int kMany = 400, kSize = 3000, kWarm = kMany * 15 / 100;
  auto name = [](int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "t/%04d.bin", i);
    return std::string(buf);
  };
  std::vector<std::string> bytes;
  for (int i = 0; i < kMany; ++i) {
    bytes.push_back(testing::RandomBytes(kSize, 5000 + i));
    testing::WriteFile(tmp_ / ("many/" + name(i)), bytes.back());
  }
  auto pack = testing::Run({testing::MkpackPath(), "pack", "--no-fsync", tmp_ / "many",
                            tmp_ / "many-media"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  Mount mount({tmp_ / "many-media"}, tmp_ / "mnt", kReadsPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  List(mnt + "/t");
  for (int i = kMany - kWarm; i < kMany; ++i) {
    ASSERT_EQ(testing::ReadFile(mnt + "/" + name(i)), bytes[i]) << name(i);
  }
  // Each round reads a file, which pushes its followers; their pages are then evicted before
  // the reader gets to them, so each of them comes back as a READ: every push is wasted.
  int at = 0;
  int rounds = 0;
  nlohmann::json push;
  int pushed_when_paused = -1;
  while (at < kMany - kWarm) {
    const int before = SettledPush(mnt)["files"].get<int>();
    ASSERT_EQ(testing::ReadFile(mnt + "/" + name(at)), bytes[at]) << name(at);
    push = SettledPush(mnt);
    const int pushed = push["files"].get<int>() - before;
    for (int i = at + 1; i < kMany - kWarm; ++i) Evict(mnt + "/" + name(i));
    const uint64_t reads = Reads(mnt);
    const int upto = std::min(at + 1 + std::max(pushed, 20), kMany - kWarm);
    for (int i = at + 1; i < upto; ++i) {
      ASSERT_EQ(testing::ReadFile(mnt + "/" + name(i)), bytes[i]) << name(i);
    }
    EXPECT_EQ(Reads(mnt), reads + static_cast<uint64_t>(upto - at - 1))
        << "evicted files were not read through requests";
    push = SettledPush(mnt);
    if (pushed_when_paused < 0 && push["paused"].get<int>() > 0) {
      pushed_when_paused = push["files"].get<int>();
    }
    at = upto;
    ++rounds;
  }
  // Wasted pushes were seen as such, pushing paused once (a pause is 1,024 reads, far more
  // than this test makes), and no file was pushed after it.
  EXPECT_GE(push["reread"].get<int>(), static_cast<int>(Payoff::kJudgeAfter) / 4) << push;
  EXPECT_EQ(push["paused"].get<int>(), 1) << push;
  EXPECT_GT(rounds, 2);
  EXPECT_EQ(push["files"].get<int>(), pushed_when_paused) << push;
}

// The daemon's own threads carry names (core/base/thread_name.h), so that `top -H` or perf on a
// busy mount tells them apart; the FUSE workers keep the program's name.
TEST_F(FusePushTest, TheDaemonsThreadsAreNamed) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", kPush);
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const int pid = MountStats(mount.path())["pid"].get<int>();
  // Each thread names itself as it starts: on a loaded machine one may not have yet (seen once
  // in a fresh-clone test.sh: no packfs-stream), so look again for up to 5 s.
  std::map<std::string, int> names;
  for (int tries = 0; tries < 100; ++tries) {
    names.clear();
    for (const auto& task : std::filesystem::directory_iterator(
             "/proc/" + std::to_string(pid) + "/task")) {
      std::string comm = testing::ReadFile(task.path() / "comm");
      if (!comm.empty() && comm.back() == '\n') comm.pop_back();
      ++names[comm];
    }
    if (names["packfs-push"] == 2 && names["packfs-walk"] == 1 && names["packfs-list"] == 1 &&
        names["packfs-stream"] == 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(names["packfs-push"], 2);
  EXPECT_EQ(names["packfs-walk"], 1);
  EXPECT_EQ(names["packfs-list"], 1);
  EXPECT_EQ(names["packfs-stream"], 1);
  EXPECT_GE(names["packfs"], 2);  // the main thread and a FUSE worker at least
}

TEST_F(FusePushTest, OptionNopushTurnsItOff) {
  Mount mount({tmp_ / "media"}, tmp_ / "mnt", {"-o", "nopush"});
  ASSERT_TRUE(mount.ok()) << mount.result().err;
  const std::string mnt = mount.path();
  List(mnt + "/d");
  WarmUp(mnt);
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(0)), files_[0]);
  EXPECT_EQ(SettledPush(mnt)["files"].get<int>(), 0);
  const uint64_t reads = Reads(mnt);
  EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(1)), files_[1]);
  EXPECT_EQ(Reads(mnt), reads + 1);
}

TEST_F(FusePushTest, AFollowerWithBadBytesIsNeverPushed) {
  // Damage one byte inside d/0002.bin's data, keeping the shard's size and mtime (so neither
  // the catalog nor the local header notice: only its CRC-32 does).
  const std::string shard = tmp_ / "media/pack-0000.zip";
  auto ls = testing::Run({testing::MkpackPath(), "resolve", "--json", tmp_ / "media", Name(2)});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  auto where = nlohmann::json::parse(ls.out.substr(0, ls.out.find('\n')));
  const uint64_t off = where["offset"].get<uint64_t>() + 100;
  ASSERT_TRUE(testing::FlipByteKeepingTimes(shard, off)) << shard;

  for (bool walk : {false, true}) {
    SCOPED_TRACE(walk ? "walked" : "-o nowalk");
    Mount mount({tmp_ / "media"}, tmp_ / "mnt", walk ? kPush : kReadsPush);
    ASSERT_TRUE(mount.ok()) << mount.result().err;
    const std::string mnt = mount.path();
    List(mnt + "/d");
    WarmUp(mnt);
    int pushed = kFiles - kWarmup - 1;  // the walk: all of d/ left but the damaged one
    if (!walk) {
      EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(0)), files_[0]);
      pushed = in_window_ - 1;
    }
    nlohmann::json push = walk ? WalkedPush(mnt, 1) : SettledPush(mnt);
    EXPECT_EQ(push["files"].get<int>(), pushed) << push;
    const ReadCount before = CountReads(mnt);
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(1)), files_[1]);
    EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(3)), files_[3]);
    ExpectReadsSince(mnt, before, 0, "the good followers were pushed");
    const uint64_t reads = Reads(mnt);
    // The damaged one was left to its own read, which fails its CRC-32 check: EIO.
    int fd = ::open((mnt + "/" + Name(2)).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    std::string buf(1 << 16, '\0');
    errno = 0;
    EXPECT_EQ(::read(fd, buf.data(), buf.size()), -1);
    EXPECT_EQ(errno, EIO);
    ::close(fd);
    EXPECT_GT(Reads(mnt), reads);
  }
}

// On a network file system (here: the shards read through a packfs mount, a FUSE file system)
// a lookup hints the shard past the file, except in a walk in shard order, which the kernel's
// read-ahead of the shard streams in fewer, larger requests: a lookup within kPrefetchSpan of
// the one before in the same shard hints nothing (hint.streamed); lookups far apart still do.
TEST(FuseNetworkHintTest, AWalkInShardOrderIsLeftToTheKernelsReadAhead) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  TempDir tmp;
  constexpr int kN = 40;  // 16-20 KiB each: 15 files apart is more than kPrefetchSpan
  for (int i = 0; i < kN; ++i) {
    testing::WriteFile(tmp / ("src/" + Name(i)),
                       testing::RandomBytes(16384 + static_cast<size_t>(i * 7919) % 4096, i));
  }
  ASSERT_TRUE(PackNested(tmp));
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  Mount mount({tmp / "outer"}, tmp / "mnt");
  ASSERT_TRUE(mount.ok()) << mount.result().err;

  // Looks the files up in `order` through a fresh Filesystem over the mounted shards; returns
  // its hint counters.
  auto hints = [&](const std::vector<int>& order) {
    std::vector<std::unique_ptr<PackSet>> sets;
    auto set = PackSet::Open(mount.path() + "/inner", PackSetOptions{});
    EXPECT_TRUE(set.ok()) << set.status().ToString();
    if (!set.ok()) return std::make_pair(uint64_t{0}, uint64_t{0});
    EXPECT_TRUE((*set)->on_network_fs());
    sets.push_back(std::move(*set));
    auto fs = Filesystem::Open(std::move(sets), {});
    EXPECT_TRUE(fs.ok()) << fs.status().ToString();
    if (!fs.ok()) return std::make_pair(uint64_t{0}, uint64_t{0});
    auto d = (*fs)->Lookup(kRootId, "d");
    EXPECT_TRUE(d.ok() && d->has_value());
    if (!d.ok() || !d->has_value()) return std::make_pair(uint64_t{0}, uint64_t{0});
    for (int i : order) {
      auto f = (*fs)->Lookup((*d)->ino, Name(i).substr(2), 1 << 20, 0);
      EXPECT_TRUE(f.ok() && f->has_value()) << Name(i);
    }
    const ::packfs::Stats& st = (*fs)->stats();
    return std::make_pair(st.hint_count(::packfs::Stats::HintEvent::kStreamed),
                          uint64_t{order.size()});
  };
  std::vector<int> walk;
  for (int i = 0; i < kN; ++i) walk.push_back(i);
  auto [streamed, looked] = hints(walk);
  EXPECT_EQ(streamed, looked - 1);  // all but the first
  // 15 files apart, back and forth: every lookup hints.
  auto [far_streamed, far_looked] = hints({0, 15, 30, 5, 20, 35, 10, 25});
  EXPECT_EQ(far_looked, 8u);
  EXPECT_EQ(far_streamed, 0u);
}

// A file of up to half kPrefetchSpan read without a lookup (after a listing) in a shard on a
// network file system gets the lookup's hint at its first READ (hint.read), except within
// kPrefetchSpan of the last one (a walk); by path the lookup gave it already, shards on a local
// disk never get it, a larger file neither, and -o noprefetch turns it off.
TEST(FuseNetworkHintTest, AFileReadAfterAListingIsHintedAtItsFirstRead) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  TempDir tmp;
  constexpr int kN = 60;  // 16-20 KiB each: 15 files apart is more than kPrefetchSpan
  std::vector<std::string> files;
  for (int i = 0; i < kN; ++i) {
    files.push_back(testing::RandomBytes(16384 + static_cast<size_t>(i * 7919) % 4096, i + 5));
    testing::WriteFile(tmp / ("src/" + Name(i)), files.back());
  }
  // Larger than half the span: its own first READ asks for as much as a hint would.
  const std::string big = testing::RandomBytes(100000, 77);
  testing::WriteFile(tmp / "src/e/big.bin", big);
  ASSERT_TRUE(PackNested(tmp));
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((tmp / "mnt2").c_str(), 0755), 0);
  Mount outer_mount({tmp / "outer"}, tmp / "mnt");
  ASSERT_TRUE(outer_mount.ok()) << outer_mount.result().err;
  auto at = Extents(tmp / "outer-src/inner");
  const std::vector<int> far = {0, 15, 30, 45, 5, 20, 35, 50};  // no two within 128 KiB
  const std::vector<int> walk = {8, 9, 10, 11, 12, 13, 14};  // from far past the last read
  struct Case {
    const char* what;
    bool network;
    bool list;
    bool prefetch;
    int hints;  // hint.read expected after the far reads, then after the walk
    int walk_hints;
  };
  for (const Case& c : {Case{"network, listed", true, true, true, 8, 1},
                        Case{"network, by path", true, false, true, 0, 0},
                        Case{"network, listed, -o noprefetch", true, true, false, 0, 0},
                        Case{"local, listed", false, true, true, 0, 0}}) {
    SCOPED_TRACE(c.what);
    const std::string set = c.network ? outer_mount.path() + "/inner" : tmp / "outer-src/inner";
    // By path: not listed by the mount either, once the directory is ready.
    std::vector<std::string> opts;
    if (!c.list) opts = {"-o", "nolist"};
    if (!c.prefetch) opts = {"-o", c.list ? "noprefetch" : "noprefetch,nolist"};
    Mount mount({set}, tmp / "mnt2", opts);
    ASSERT_TRUE(mount.ok()) << mount.result().err;
    const std::string mnt = mount.path();
    if (c.list) List(mnt + "/d");
    // The hint brings the members after the file into the page cache (of the shard file on the
    // outer mount): d/0031 to d/0033 lie within 128 KiB of d/0030's header.
    const std::string shard = outer_mount.path() + "/inner/pack-0000.zip";
    const uint64_t from = (at[Name(31)].first + 4095) / 4096 * 4096;
    const uint64_t to = at[Name(33)].first + at[Name(33)].second;
    const size_t pages = (to + 4095) / 4096 - from / 4096;
    if (c.network) ResidentPages(shard, 0, 0, /*drop=*/true);
    for (int i : far) EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
    EXPECT_EQ(MountStats(mnt)["hint"]["read"].get<int>(), c.hints);
    if (c.network && c.list) {
      const size_t resident = ResidentPages(shard, from, to);
      if (c.prefetch) {
        EXPECT_GE(resident * 10, pages * 9) << resident << " of " << pages;
      } else {
        EXPECT_LT(resident, pages / 2) << resident << " of " << pages;
      }
    }
    for (int i : walk) EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
    EXPECT_EQ(MountStats(mnt)["hint"]["read"].get<int>(), c.hints + c.walk_hints);
    // Read again (from the page cache): no new hint.
    for (int i : far) EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
    EXPECT_EQ(MountStats(mnt)["hint"]["read"].get<int>(), c.hints + c.walk_hints);
    if (c.list) List(mnt + "/e");
    EXPECT_EQ(testing::ReadFile(mnt + "/e/big.bin"), big);
    EXPECT_EQ(MountStats(mnt)["hint"]["read"].get<int>(), c.hints + c.walk_hints) << "e/big.bin";
  }
}

// Shards on a network file system (here: read through a packfs mount, a FUSE file system) push
// nothing: the reply would wait for the followers' fetch over the network. The same pack set on
// the local disk, listed and read the same way, does push.
TEST(FuseNetworkPushTest, ShardsOnANetworkFileSystemPushNothing) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  TempDir tmp;
  constexpr int kN = 40;
  std::vector<std::string> files;
  for (int i = 0; i < kN; ++i) {
    files.push_back(testing::RandomBytes(4096 + static_cast<size_t>(i * 7919) % 8192, i + 3));
    testing::WriteFile(tmp / ("src/" + Name(i)), files.back());
  }
  ASSERT_TRUE(PackNested(tmp));
  ASSERT_EQ(::mkdir((tmp / "mnt").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((tmp / "mnt2").c_str(), 0755), 0);
  Mount outer_mount({tmp / "outer"}, tmp / "mnt");
  ASSERT_TRUE(outer_mount.ok()) << outer_mount.result().err;
  for (const bool network : {true, false}) {
    SCOPED_TRACE(network ? "shards on FUSE" : "shards on the local disk");
    const std::string set = network ? outer_mount.path() + "/inner" : tmp / "outer-src/inner";
    Mount mount({set}, tmp / "mnt2", kPush);
    ASSERT_TRUE(mount.ok()) << mount.result().err;
    const std::string mnt = mount.path();
    List(mnt + "/d");
    for (int i = kN - kN * 16 / 100; i < kN; ++i) {  // past the directory's first 15%
      EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
    }
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(testing::ReadFile(mnt + "/" + Name(i)), files[i]) << Name(i);
    }
    nlohmann::json push = network ? SettledPush(mnt) : WalkedPush(mnt, 1);
    if (network) {
      EXPECT_EQ(push["reads"].get<int>(), 0) << push;
      EXPECT_EQ(push["files"].get<int>(), 0) << push;
      EXPECT_EQ(push["walked_dirs"].get<int>(), 0) << push;
      EXPECT_GE(Reads(mnt), 10u + kN * 16 / 100);
    } else {
      EXPECT_GT(push["files"].get<int>(), 3) << push;
      EXPECT_EQ(push["walked_dirs"].get<int>(), 1) << push;
    }
  }
}

}  // namespace
}  // namespace packfs
