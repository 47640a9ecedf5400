// Unit tests for key validation, blob references and shard file names.
#include "core/base/key.h"

#include <gtest/gtest.h>

namespace packfs {
namespace {

TEST(KeyTest, AcceptsSafeKeys) {
  for (const char* k : {"a", "img/0000.jpg", "audio/ü-ß/clip 01.flac", "a:b/c.bin", "x\ty", "-",
                        "a/b/c/d/e/f/g/h/i/j/k/l/m.bin", ".hidden", "a..b", "..a"}) {
    EXPECT_TRUE(ValidateKey(k).ok()) << k << ": " << ValidateKey(k).ToString();
  }
}

TEST(KeyTest, RefusesUnsafeKeys) {
  const std::string with_nul("a\0b", 3);
  for (const std::string& k :
       {std::string(""), std::string("/abs"), std::string("a/../b"), std::string(".."),
        std::string("./a"), std::string("a/./b"), std::string("a//b"), std::string("a/"),
        std::string("a\\b"), with_nul, std::string(" a"), std::string("a "), std::string("a\n"),
        std::string("a::b"), std::string("\xff\xfe"), std::string("\xc0\xaf"),
        std::string("\xed\xa0\x80"), std::string(256, 'x')}) {
    EXPECT_FALSE(ValidateKey(k).ok()) << QuoteKey(k);
  }
}

TEST(KeyTest, QuoteEscapesControlAndInvalidBytes) {
  EXPECT_EQ(QuoteKey(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(QuoteKey("ü"), "ü");
  EXPECT_EQ(QuoteKey("\xff"), "\\xFF");
}

TEST(RefTest, FormatAndParseRoundTrip) {
  std::string r = FormatRef("images/0000.jpg", "media/pack-0000.zip");
  EXPECT_EQ(r, "zip://images/0000.jpg::media/pack-0000.zip");
  auto p = ParseRef(r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->key, "images/0000.jpg");
  EXPECT_EQ(p->shard, "media/pack-0000.zip");
}

TEST(RefTest, SplitsAtFirstSeparator) {
  auto p = ParseRef("zip://a:b/c.bin::media/x::y.zip");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->key, "a:b/c.bin");
  EXPECT_EQ(p->shard, "media/x::y.zip");
}

TEST(RefTest, RejectsMalformed) {
  EXPECT_FALSE(ParseRef("http://a::b").ok());
  EXPECT_FALSE(ParseRef("zip://a").ok());
  EXPECT_FALSE(ParseRef("zip://::media/p.zip").ok());
  EXPECT_FALSE(ParseRef("zip://../a::media/p.zip").ok());
  EXPECT_FALSE(ParseRef("zip://a::").ok());
}

TEST(ShardNameTest, FourThenFiveDigits) {
  EXPECT_EQ(ShardFileName(0), "pack-0000.zip");
  EXPECT_EQ(ShardFileName(9999), "pack-9999.zip");
  EXPECT_EQ(ShardFileName(10000), "pack-10000.zip");
  EXPECT_EQ(ParseShardFileName("pack-0003.zip"), 3);
  EXPECT_EQ(ParseShardFileName("pack-10000.zip"), 10000);
  EXPECT_EQ(ParseShardFileName("pack-003.zip"), -1);
  EXPECT_EQ(ParseShardFileName("pack-01234.zip"), -1);
  EXPECT_EQ(ParseShardFileName("pack-0003.zip.tmp"), -1);
  EXPECT_EQ(ParseShardFileName("other.zip"), -1);
}

}  // namespace
}  // namespace packfs
