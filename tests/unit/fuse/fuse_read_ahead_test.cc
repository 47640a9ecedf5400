// MountDevice (fuse/read_ahead.h): the device of a mount point from a mountinfo file, escaped
// paths, the last of stacked mounts, and a mount point that is not there. LargestSplicedRead
// against this kernel's pipes.
#include "fuse/read_ahead.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/test_util.h"

namespace packfs {
namespace {

TEST(ReadAheadTest, MountDeviceReadsMountinfo) {
  testing::TempDir tmp;
  const std::string info = tmp / "mountinfo";
  testing::WriteFile(info,
                     "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
                     "40 22 0:45 / /mnt/a\\040b rw,nosuid - fuse.packfs /data rw,user_id=0\n"
                     "41 22 0:46 / /mnt/c rw - fuse.packfs /x rw\n"
                     "42 41 0:47 / /mnt/c rw - fuse.packfs /y rw\n");
  Result<std::string> dev = MountDevice("/mnt/a b", info);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, "0:45");
  dev = MountDevice("/mnt/c", info);  // mounted over: the last one is the one in use
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(*dev, "0:47");
  EXPECT_EQ(MountDevice("/mnt/a", info).status().code(), Code::kNotFound);
  EXPECT_FALSE(MountDevice("/", tmp / "missing").ok());
}

// What LargestSplicedRead returns fits the pipe libfuse needs for it (the reply, its header and
// three pages), and anything it leaves out does not fit one (here, without CAP_SYS_RESOURCE, a
// 1 MiB READ does not).
TEST(ReadAheadTest, LargestSplicedReadFitsLibfusesPipe) {
  auto pipe_takes = [](size_t bytes) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    const bool ok = ::fcntl(fds[0], F_SETPIPE_SZ, static_cast<int>(bytes)) >= 0;
    ::close(fds[0]);
    ::close(fds[1]);
    return ok;
  };
  const size_t libfuse_extra = 3 * 4096 + 16;
  EXPECT_EQ(LargestSplicedRead(64 << 10), size_t{64} << 10);
  for (size_t max_read : {size_t{1} << 20, size_t{4} << 20}) {
    const size_t fits = LargestSplicedRead(max_read);
    EXPECT_GE(fits, size_t{64} << 10) << max_read;
    EXPECT_LE(fits, max_read);
    EXPECT_TRUE(pipe_takes(fits + libfuse_extra)) << fits;
    if (fits < max_read) {
      EXPECT_FALSE(pipe_takes(max_read + libfuse_extra)) << max_read;
    }
  }
  // The default max_read: whole pages, and every READ of that size splices.
  const unsigned max_read = SplicedMaxRead(1u << 20, LargestSplicedRead(1u << 20));
  EXPECT_EQ(max_read % 4096, 0u);
  EXPECT_GE(max_read, 128u << 10);
  EXPECT_LE(max_read, 1u << 20);
  EXPECT_EQ(LargestSplicedRead(max_read), max_read);
  // Whole pages of what fits; never under 128 KiB; max_read when all of it fits.
  EXPECT_EQ(SplicedMaxRead(1u << 20, (1u << 20) - 16384 + 100), (1u << 20) - 16384);
  EXPECT_EQ(SplicedMaxRead(1u << 20, 64u << 10), 1u << 20);
  EXPECT_EQ(SplicedMaxRead(1u << 20, 4u << 20), 1u << 20);
}

}  // namespace
}  // namespace packfs
