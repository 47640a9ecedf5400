// Reading through a real packfs mount: many threads of random preads with byte checks, reads
// past EOF, mmap, sendfile and copy_file_range from the mount, cp -a of the tree, and MP4s
// (H.264 with B-frames, AV1) that ffprobe and ffmpeg decode exactly as from the loose file.
#include <fcntl.h>
#include <limits.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::Mount;
using testing::TempDir;

class FuseIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    big_ = testing::RandomBytes(9 * 1024 * 1024 + 123, 42);
    testing::WriteFile(tmp_ / "tree/big.bin", big_);
    for (int i = 0; i < 64; ++i) {
      std::string rel = "small/" + std::to_string(i) + ".bin";
      small_.push_back(testing::RandomBytes(4096 + static_cast<size_t>(i) * 333, 100 + i));
      testing::WriteFile(tmp_ / ("tree/" + rel), small_.back());
    }
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 20);
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
    mount_ = std::make_unique<Mount>(std::vector<std::string>{tmp_ / "media"}, tmp_ / "mnt");
    ASSERT_TRUE(mount_->ok()) << mount_->result().err;
  }
  std::string Mnt(const std::string& rel) const { return mount_->path() + "/" + rel; }

  TempDir tmp_;
  std::string big_;
  std::vector<std::string> small_;
  std::unique_ptr<Mount> mount_;
};

TEST_F(FuseIoTest, EightThreadsOfRandomPreads) {
  std::atomic<int> bad{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      int fd = ::open(Mnt("big.bin").c_str(), O_RDONLY);
      if (fd < 0) {
        ++bad;
        return;
      }
      std::string buf(1 << 20, '\0');
      for (int i = 0; i < 200; ++i) {
        size_t off = rng() % big_.size();
        size_t len = 1 + rng() % buf.size();
        ssize_t n = ::pread(fd, buf.data(), len, static_cast<off_t>(off));
        size_t want = std::min(len, big_.size() - off);
        if (n != static_cast<ssize_t>(want) || buf.compare(0, want, big_, off, want) != 0) ++bad;
        // And a whole small file through its own descriptor.
        size_t k = rng() % small_.size();
        if (testing::ReadFile(Mnt("small/" + std::to_string(k) + ".bin")) != small_[k]) ++bad;
        ++reads;
      }
      ::close(fd);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(reads.load(), 1600);
}

TEST_F(FuseIoTest, ReadsPastEndAreShort) {
  int fd = ::open(Mnt("small/3.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const std::string& want = small_[3];
  std::string buf(100000, '\0');
  EXPECT_EQ(::pread(fd, buf.data(), buf.size(), 0), static_cast<ssize_t>(want.size()));
  EXPECT_EQ(buf.substr(0, want.size()), want);
  EXPECT_EQ(::pread(fd, buf.data(), 100, static_cast<off_t>(want.size()) - 10), 10);
  EXPECT_EQ(buf.substr(0, 10), want.substr(want.size() - 10));
  EXPECT_EQ(::pread(fd, buf.data(), 100, static_cast<off_t>(want.size())), 0);
  EXPECT_EQ(::pread(fd, buf.data(), 100, 1 << 30), 0);
  ::close(fd);
}

// Pages of [off, off + len) of `path` that are in the page cache (mincore of a mapping, which
// faults nothing in).
size_t ResidentPages(const std::string& path, uint64_t off, uint64_t len, size_t* total) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = off / page * page;
  const size_t span = static_cast<size_t>(off + len - start);
  *total = (span + page - 1) / page;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  void* map = ::mmap(nullptr, span, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  ::close(fd);
  if (map == MAP_FAILED) return 0;
  std::vector<unsigned char> in(*total);
  size_t resident = 0;
  if (::mincore(map, span, in.data()) == 0) {
    for (unsigned char c : in) resident += c & 1;
  }
  ::munmap(map, span);
  return resident;
}

// A lookup by path starts reading a small file into the page cache (the read that follows then
// finds it there); -o noprefetch does not.
TEST_F(FuseIoTest, LookupStartsReadingASmallFileUnlessNoprefetch) {
  struct Probe {
    size_t resident = 0;
    size_t total = 0;
  };
  // stat (the lookup), then where the member lies, then what of it is cached.
  auto probe = [](const std::string& file, int wait_ms) {
    struct stat st;
    EXPECT_EQ(::stat(file.c_str(), &st), 0) << file;
    const std::string shard = testing::XattrText(file, "user.packfs.shard");
    const uint64_t off = std::stoull(testing::XattrText(file, "user.packfs.offset"));
    Probe p;
    for (int waited = 0;; waited += 10) {
      p.resident = ResidentPages(shard, off, static_cast<uint64_t>(st.st_size), &p.total);
      if (p.resident == p.total || waited >= wait_ms) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  ASSERT_EQ(::mkdir((tmp_ / "mnt2").c_str(), 0755), 0);
  {
    Mount off({tmp_ / "media"}, tmp_ / "mnt2", {"-o", "noprefetch"});
    ASSERT_TRUE(off.ok()) << off.result().err;
    // Both mounts are up (indexing the shards read some of them): empty the shards' cache.
    for (const auto& e : std::filesystem::directory_iterator(tmp_ / "media")) {
      int fd = ::open(e.path().c_str(), O_RDONLY);
      ASSERT_GE(fd, 0);
      ::fdatasync(fd);
      ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
      ::close(fd);
    }
    Probe p = probe(tmp_ / "mnt2/small/10.bin", 300);
    EXPECT_GT(p.total, 0u);
    EXPECT_EQ(p.resident, 0u) << "noprefetch: the lookup read the file";
  }
  Probe p = probe(Mnt("small/20.bin"), 3000);
  EXPECT_GT(p.total, 0u);
  EXPECT_EQ(p.resident, p.total) << "the lookup did not bring the file into the page cache";
  EXPECT_EQ(testing::ReadFile(Mnt("small/20.bin")), small_[20]);
}

// Files and directories are opened by the kernel alone (no OPEN, no OPENDIR after the first
// answer) and both keep their cache across opens: a second listing and a second read of the same
// file send no request at all. With -o open, both opens are answered, so each sends its request.
TEST_F(FuseIoTest, ReopeningSendsNoRequestsUnlessOptionOpen) {
  auto requests = [](const std::string& mnt) { return testing::MountStats(mnt)["requests"]; };
  auto list_and_read = [this](const std::string& mnt) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(mnt + "/small")) {
      names.push_back(e.path().filename());
    }
    EXPECT_EQ(names.size(), small_.size()) << mnt;
    EXPECT_EQ(testing::ReadFile(mnt + "/small/7.bin"), small_[7]) << mnt;
  };
  list_and_read(mount_->path());
  nlohmann::json first = requests(mount_->path());
  list_and_read(mount_->path());
  list_and_read(mount_->path());
  nlohmann::json again = requests(mount_->path());
  for (const char* kind : {"opendir", "readdir", "readdirplus", "open", "read", "lookup"}) {
    EXPECT_EQ(again[kind], first[kind]) << kind << " requests on re-listing and re-reading";
  }
  EXPECT_LE(first["opendir"].get<uint64_t>(), 1u) << "OPENDIR was answered, not skipped";

  ASSERT_EQ(::mkdir((tmp_ / "mnt2").c_str(), 0755), 0);
  Mount open({tmp_ / "media"}, tmp_ / "mnt2", {"-o", "open"});
  ASSERT_TRUE(open.ok()) << open.result().err;
  list_and_read(open.path());
  first = requests(open.path());
  list_and_read(open.path());
  again = requests(open.path());
  EXPECT_EQ(again["opendir"].get<uint64_t>(), first["opendir"].get<uint64_t>() + 1);
  EXPECT_EQ(again["open"].get<uint64_t>(), first["open"].get<uint64_t>() + 1);
  // Kept caches all the same: the listing and the bytes come from the kernel.
  for (const char* kind : {"readdir", "readdirplus", "read", "lookup"}) {
    EXPECT_EQ(again[kind], first[kind]) << kind << " requests with -o open";
  }
}

TEST_F(FuseIoTest, Mmap) {
  int fd = ::open(Mnt("big.bin").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, big_.size(), PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(memcmp(p, big_.data(), big_.size()), 0);
  ::munmap(p, big_.size());
  ::close(fd);
}

TEST_F(FuseIoTest, SendfileAndCopyFileRange) {
  int in = ::open(Mnt("big.bin").c_str(), O_RDONLY);
  ASSERT_GE(in, 0);
  int out = ::open((tmp_ / "sendfile.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  off_t off = 0;
  while (off < static_cast<off_t>(big_.size())) {
    ssize_t n = ::sendfile(out, in, &off, big_.size());
    ASSERT_GT(n, 0) << strerror(errno);
  }
  ::close(out);
  EXPECT_EQ(testing::ReadFile(tmp_ / "sendfile.out"), big_);
  // copy_file_range: the kernel refuses it between different filesystem types with EXDEV
  // (then callers fall back to splice, as cp does); within the limits it allows, bytes match.
  out = ::open((tmp_ / "cfr.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  loff_t in_off = 0;
  ssize_t first = ::copy_file_range(in, &in_off, out, nullptr, big_.size(), 0);
  if (first < 0) {
    EXPECT_EQ(errno, EXDEV) << strerror(errno);
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    while (in_off < static_cast<loff_t>(big_.size())) {
      ssize_t n = ::splice(in, &in_off, pipefd[1], nullptr, 1 << 16, 0);
      ASSERT_GT(n, 0) << strerror(errno);
      while (n > 0) {
        ssize_t m = ::splice(pipefd[0], nullptr, out, nullptr, static_cast<size_t>(n), 0);
        ASSERT_GT(m, 0) << strerror(errno);
        n -= m;
      }
    }
    ::close(pipefd[0]);
    ::close(pipefd[1]);
  } else {
    while (in_off < static_cast<loff_t>(big_.size())) {
      ssize_t n = ::copy_file_range(in, &in_off, out, nullptr, big_.size(), 0);
      ASSERT_GT(n, 0) << strerror(errno);
    }
  }
  ::close(out);
  ::close(in);
  EXPECT_EQ(testing::ReadFile(tmp_ / "cfr.out"), big_);
  // Python's shutil.copyfile uses sendfile on Linux.
  auto py = testing::Run({"python3", "-c", "import shutil,sys; shutil.copyfile(*sys.argv[1:])",
                          Mnt("big.bin"), tmp_ / "shutil.out"});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(testing::ReadFile(tmp_ / "shutil.out"), big_);
}

TEST_F(FuseIoTest, CpDashA) {
  ASSERT_EQ(testing::Run({"cp", "-a", mount_->path(), tmp_ / "copy"}).exit_code, 0);
  auto diff = testing::Run({"diff", "-r", tmp_ / "tree", tmp_ / "copy"});
  EXPECT_EQ(diff.exit_code, 0) << diff.out;
}

// An MP4 made by ffmpeg, read through the mount: probing and decoding give byte-identical output.
class FuseVideoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    ASSERT_TRUE(testing::HasCommand("ffmpeg") && testing::HasCommand("ffprobe"));
  }
  void CheckVideo(const std::vector<std::string>& codec_args) {
    ASSERT_EQ(::mkdir((tmp_ / "tree").c_str(), 0755), 0);
    std::vector<std::string> argv = {"ffmpeg", "-v", "error", "-f", "lavfi", "-i",
                                     "testsrc=duration=2:size=320x240:rate=25"};
    argv.insert(argv.end(), codec_args.begin(), codec_args.end());
    argv.push_back(tmp_ / "tree/clip.mp4");
    auto enc = testing::Run(argv);
    ASSERT_EQ(enc.exit_code, 0) << enc.err;
    testing::WriteFile(tmp_ / "tree/other.txt", "neighbour");
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 10);
    ASSERT_EQ(::mkdir((tmp_ / "mnt").c_str(), 0755), 0);
    Mount m({tmp_ / "media"}, tmp_ / "mnt");
    ASSERT_TRUE(m.ok()) << m.result().err;
    auto probe = [](const std::string& f) {
      return testing::Run({"ffprobe", "-v", "error", "-show_format", "-show_streams", f});
    };
    auto frames = [](const std::string& f) {
      return testing::Run({"ffmpeg", "-v", "error", "-i", f, "-f", "framemd5", "-"});
    };
    auto loose_probe = probe(tmp_ / "tree/clip.mp4");
    auto mnt_probe = probe(m.path() + "/clip.mp4");
    ASSERT_EQ(loose_probe.exit_code, 0) << loose_probe.err;
    ASSERT_EQ(mnt_probe.exit_code, 0) << mnt_probe.err;
    // filename= differs by path; everything else must match.
    auto strip = [](std::string s) {
      size_t p = s.find("filename=");
      if (p != std::string::npos) s.erase(p, s.find('\n', p) - p);
      return s;
    };
    EXPECT_EQ(strip(loose_probe.out), strip(mnt_probe.out));
    auto loose_frames = frames(tmp_ / "tree/clip.mp4");
    auto mnt_frames = frames(m.path() + "/clip.mp4");
    ASSERT_EQ(loose_frames.exit_code, 0) << loose_frames.err;
    EXPECT_GT(loose_frames.out.size(), 1000u);
    EXPECT_EQ(loose_frames.out, mnt_frames.out);
  }
  TempDir tmp_;
};

TEST_F(FuseVideoTest, H264WithBFrames) {
  CheckVideo({"-c:v", "libx264", "-bf", "3", "-g", "25", "-pix_fmt", "yuv420p"});
  auto b = testing::Run({"ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
                "stream=has_b_frames", "-of", "csv=p=0", tmp_ / "tree/clip.mp4"});
  EXPECT_NE(b.out, "0\n") << "expected B-frames";
}

TEST_F(FuseVideoTest, Av1) {
  auto encoders = testing::Run({"ffmpeg", "-hide_banner", "-encoders"}).out;
  if (encoders.find("libsvtav1") != std::string::npos) {
    CheckVideo({"-c:v", "libsvtav1", "-preset", "12", "-pix_fmt", "yuv420p"});
  } else if (encoders.find("libaom-av1") != std::string::npos) {
    CheckVideo({"-c:v", "libaom-av1", "-cpu-used", "8", "-pix_fmt", "yuv420p"});
  } else if (encoders.find("librav1e") != std::string::npos) {
    CheckVideo({"-c:v", "librav1e", "-speed", "10", "-pix_fmt", "yuv420p"});
  } else {
    GTEST_SKIP() << "no AV1 encoder in this ffmpeg";
  }
}

}  // namespace
}  // namespace packfs
