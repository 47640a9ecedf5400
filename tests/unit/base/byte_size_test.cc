// ParseByteSize: the units and numbers packfs and mkpack accept, and what they refuse.
#include "core/base/byte_size.h"

#include <gtest/gtest.h>

namespace packfs {
namespace {

TEST(ByteSize, PlainNumbersAndBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("536870912"), 536870912u);
  EXPECT_EQ(*ParseByteSize("1"), 1u);
  EXPECT_EQ(*ParseByteSize("100B"), 100u);
  EXPECT_EQ(*ParseByteSize("4k"), 4096u);
  EXPECT_EQ(*ParseByteSize("4K"), 4096u);
  EXPECT_EQ(*ParseByteSize("4KiB"), 4096u);
  EXPECT_EQ(*ParseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("512MiB"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("4G"), uint64_t{4} << 30);
  EXPECT_EQ(*ParseByteSize("4GiB"), uint64_t{4} << 30);
  EXPECT_EQ(*ParseByteSize("1.5G"), uint64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("2T"), uint64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("0.5K"), 512u);
  EXPECT_EQ(*ParseByteSize("8388608T"), uint64_t{1} << 63);
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  for (const char* s : {"", "M", "abc", "-1", "-4G", "0", "0K", "0.1", "4X", "4 G", " 4G", "4GB",
                        "4gib", "0x10", "inf", "nan", "1e3", "1.2.3", ".", "16777216T", "4G "}) {
    Result<uint64_t> r = ParseByteSize(s);
    EXPECT_FALSE(r.ok()) << "'" << s << "' gave " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << s;
      EXPECT_NE(r.status().message().find("e.g. 4294967296"), std::string::npos) << s;
    }
  }
}

}  // namespace
}  // namespace packfs
