// DirNames (core/read/dir_names.h): a held directory answers its names and their absence; a
// directory is due for loading once an eighth of it (and kLoadAfter) was looked up; children out of
// byte order, directories over kMaxChildren and holds past kMaxNodes are refused.
#include "core/read/dir_names.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace packfs {
namespace {

std::vector<Node> Children(uint64_t parent, std::vector<std::string> names) {
  std::vector<Node> out;
  for (size_t i = 0; i < names.size(); ++i) {
    Node n;
    n.id = parent * 1000 + i;
    n.parent = parent;
    n.name = names[i];
    n.type = NodeType::kFile;
    n.size = i;
    out.push_back(n);
  }
  return out;
}

TEST(DirNamesTest, AHeldDirectoryAnswersNamesAndAbsence) {
  DirNames d;
  Node n;
  EXPECT_EQ(d.Find(7, "a", &n), DirNames::Found::kNotHeld);
  // Byte order: upper case before lower case, UTF-8 after ASCII.
  ASSERT_TRUE(d.Hold(7, Children(7, {"B", "a", "a1", "b", "\xc3\xa9"})));
  ASSERT_EQ(d.Find(7, "a1", &n), DirNames::Found::kChild);
  EXPECT_EQ(n.id, 7002u);
  EXPECT_EQ(n.name, "a1");
  ASSERT_EQ(d.Find(7, "\xc3\xa9", &n), DirNames::Found::kChild);
  EXPECT_EQ(n.size, 4u);
  for (const char* absent : {"", "A", "a0", "a2", "c", "\xc3", "\xff"}) {
    EXPECT_EQ(d.Find(7, absent, &n), DirNames::Found::kAbsent) << absent;
  }
  EXPECT_EQ(d.Find(8, "a", &n), DirNames::Found::kNotHeld);
  const DirNames::Counters c = d.counters();
  EXPECT_EQ(c.dirs, 1u);
  EXPECT_EQ(c.nodes, 5u);
  EXPECT_EQ(c.answered, 9u);
  EXPECT_FALSE(d.Hold(7, Children(7, {"x"})));  // held already
}

TEST(DirNamesTest, LoadIsDueAfterAnEighthOfTheDirectoryIsLookedUp) {
  DirNames d;
  std::vector<uint32_t> asked;  // the counts at which Count says to check
  uint32_t n = 0;
  for (int i = 0; i < 300; ++i) {
    if (d.Count(3, &n)) asked.push_back(n);
  }
  EXPECT_EQ(n, 300u);
  EXPECT_EQ(asked, (std::vector<uint32_t>{DirNames::kLoadAfter, 32, 64, 128, 256}));
  EXPECT_FALSE(d.Count(4, &n));
  EXPECT_EQ(n, 1u);  // counted per directory
  EXPECT_FALSE(d.Due(DirNames::kLoadAfter - 1, 10));  // never before kLoadAfter
  EXPECT_TRUE(d.Due(DirNames::kLoadAfter, 10));
  EXPECT_FALSE(d.Due(64, 1000));  // a tenth of the directory: not due
  EXPECT_TRUE(d.Due(128, 1000));
}

TEST(DirNamesTest, RefusesWhatIsOutOfOrderOrOverTheBounds) {
  DirNames d;
  EXPECT_FALSE(d.Hold(1, Children(1, {"b", "a"})));  // not in byte order
  EXPECT_FALSE(d.Hold(1, Children(1, {"a", "B"})));
  const uint32_t many = 1u << 30;  // lookups: due, if it fits
  EXPECT_FALSE(d.Due(many, DirNames::kMaxChildren + 1));
  EXPECT_TRUE(d.Due(many, DirNames::kMaxChildren));
  std::vector<std::string> names;
  for (uint64_t i = 0; i < DirNames::kMaxChildren; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08llu", static_cast<unsigned long long>(i));
    names.push_back(buf);
  }
  uint64_t dir = 1;
  for (; d.Due(many, DirNames::kMaxChildren); ++dir) ASSERT_TRUE(d.Hold(dir, Children(dir, names)));
  EXPECT_EQ(d.counters().nodes, DirNames::kMaxNodes);  // kMaxNodes is a multiple of it
  EXPECT_FALSE(d.Due(many, 1));
  EXPECT_FALSE(d.Hold(dir, Children(dir, {"a"})));
  Node n;
  EXPECT_EQ(d.Find(1, "00000007", &n), DirNames::Found::kChild);
  EXPECT_EQ(d.Find(dir, "a", &n), DirNames::Found::kNotHeld);
}

}  // namespace
}  // namespace packfs
