// MountDevice (fuse/read_ahead.h): the device of a mount point from a mountinfo file, escaped
// paths, the last of stacked mounts, and a mount point that is not there.
#include "fuse/read_ahead.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace packfs
