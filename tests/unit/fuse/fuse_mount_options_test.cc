// Mount option parsing (fuse/mount_options.h): what packfs keeps, what goes on to libfuse, what
// mount(8) alone uses, and the refusals.
#include "fuse/mount_options.h"

#include <gtest/gtest.h>

namespace packfs {
namespace {

TEST(MountOptionsTest, IoUringIsUnsetUntilAskedForOrRefused) {
  MountOptions none;
  ASSERT_TRUE(ParseMountOptions("nopush,allow_other", &none).ok());
  EXPECT_FALSE(none.io_uring.has_value());  // the default: the ring where the kernel allows it
  MountOptions on;
  ASSERT_TRUE(ParseMountOptions("io_uring", &on).ok());
  EXPECT_EQ(on.io_uring, std::optional<bool>(true));
  MountOptions off;
  ASSERT_TRUE(ParseMountOptions("io_uring,noio_uring", &off).ok());  // the last one wins
  EXPECT_EQ(off.io_uring, std::optional<bool>(false));
  EXPECT_TRUE(off.fuse_options.empty());
}

TEST(MountOptionsTest, KeepsItsOwnPassesTheRestAndDropsMountsOnly) {
  MountOptions o;
  ASSERT_TRUE(
      ParseMountOptions("uid=7,umask=022,threads=4,active_threads=3,push=256K,defaults,noauto,"
                        "x-systemd.x,"
                        "allow_other,nocrc,open,read_ahead=2M,nowalk,nolist,exact_gets",
                        &o)
          .ok());
  EXPECT_EQ(o.uid, std::optional<uint32_t>(7));
  EXPECT_EQ(o.umask, std::optional<uint32_t>(022));
  EXPECT_EQ(o.threads, std::optional<int>(4));
  EXPECT_EQ(o.active_threads, std::optional<int>(3));
  EXPECT_FALSE(MountOptions().active_threads.has_value());  // the default: the CPUs
  EXPECT_EQ(o.push_window, std::optional<uint64_t>(256u << 10));
  EXPECT_EQ(o.read_ahead, std::optional<uint32_t>(2u << 20));
  EXPECT_FALSE(o.crc);
  EXPECT_FALSE(o.no_open);
  EXPECT_FALSE(o.walk);
  EXPECT_TRUE(MountOptions().walk);  // walks are the default
  EXPECT_FALSE(o.list);
  EXPECT_TRUE(MountOptions().list);  // and listings
  EXPECT_FALSE(o.block_gets);
  EXPECT_TRUE(MountOptions().block_gets);  // and remote block fetches
  EXPECT_EQ(o.fuse_options, std::vector<std::string>{"allow_other"});
  EXPECT_EQ(FuseOptionString(o, "/data/a,b", 131072),
            "ro,default_permissions,subtype=packfs,fsname=/data/a\\,b,allow_other,"
            "max_read=131072");
}

TEST(MountOptionsTest, RefusesMalformedValuesNamingThem) {
  MountOptions o;
  Status s = ParseMountOptions("uid=abc", &o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("uid=abc"), std::string::npos) << s.message();
  EXPECT_FALSE(ParseMountOptions("threads=0", &o).ok());
  EXPECT_FALSE(ParseMountOptions("active_threads=1025", &o).ok());
  EXPECT_FALSE(ParseMountOptions("max_read=100", &o).ok());
  EXPECT_FALSE(ParseMountOptions("push=65M", &o).ok());
  EXPECT_FALSE(ParseMountOptions("read_ahead=65M", &o).ok());
  s = ParseMountOptions("read_ahead=lots", &o);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("-o read_ahead"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace packfs
