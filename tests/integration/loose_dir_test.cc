// Loose directories served as sets (core/loose_dir): every file readable byte-exact through a
// Filesystem, merged with a packed set, refs/CRC xattrs absent, and a file changed after the open
// refused with EIO-class errors rather than served.
#include "core/open/open_source.h"
#include "core/read/loose_dir.h"

#include <gtest/gtest.h>
#include <sys/time.h>

#include <algorithm>
#include <map>

#include "core/read/filesystem.h"
#include "core/write/pack_input.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::TempDir;

std::string ReadAll(const Filesystem& fs, const std::string& key) {
  uint64_t ino = kRootId;
  size_t start = 0;
  while (start <= key.size()) {
    size_t slash = key.find('/', start);
    std::string part = key.substr(start, slash == std::string::npos ? std::string::npos
                                                                    : slash - start);
    auto got = fs.Lookup(ino, part);
    EXPECT_TRUE(got.ok() && got->has_value()) << key;
    if (!got.ok() || !got->has_value()) return "<missing>";
    ino = (*got)->ino;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  auto attr = fs.GetAttr(ino);
  EXPECT_TRUE(attr.ok());
  std::string out(attr->size, '\0');
  auto n = fs.Read(ino, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.status().ToString());
  if (!n.ok()) return "<error: " + n.status().ToString() + ">";
  out.resize(*n);
  return out;
}

TEST(LooseDir, ServesEveryFileByteExact) {
  TempDir tmp;
  const std::string root = tmp / "ds";
  std::map<std::string, std::string> files = {
      {"meta/info.json", "{\"codebase_version\": \"v3.0\"}"},
      {"data/chunk-000/file-000.parquet", testing::RandomBytes(300000, 1)},
      {"videos/cam/chunk-000/file-000.mp4", testing::RandomBytes(2 << 20, 2)},
      {"README.md", ""},
  };
  for (const auto& [k, v] : files) testing::WriteFile(root + "/" + k, v);
  auto set = OpenLooseDirectory(root, "");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_TRUE((*set)->raw_members());
  EXPECT_EQ((*set)->catalog().totals().files, files.size());
  std::vector<std::unique_ptr<PackSet>> sets;
  sets.push_back(std::move(*set));
  auto fs = Filesystem::Open(std::move(sets), FilesystemOptions{});
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  for (const auto& [k, v] : files) EXPECT_EQ(ReadAll(**fs, k), v) << k;
  // Zero-copy extents point into the file itself.
  auto ino = (*fs)->Lookup(kRootId, "README.md");
  ASSERT_TRUE(ino.ok() && ino->has_value());
  auto xattrs = (*fs)->ListXattr((*ino)->ino);
  ASSERT_TRUE(xattrs.ok());
  EXPECT_EQ(std::count(xattrs->begin(), xattrs->end(), std::string(Filesystem::kXattrRef)), 0);
  auto ref = (*fs)->GetXattr((*ino)->ino, Filesystem::kXattrRef);
  ASSERT_TRUE(ref.ok());
  EXPECT_FALSE(ref->has_value());
  auto shard = (*fs)->GetXattr((*ino)->ino, Filesystem::kXattrShard);
  ASSERT_TRUE(shard.ok() && shard->has_value());
  EXPECT_EQ(**shard, root + "/README.md");
}

TEST(LooseDir, FileChangedAfterOpenIsRefusedNotServed) {
  TempDir tmp;
  const std::string root = tmp / "ds";
  testing::WriteFile(root + "/a.bin", std::string(1000, 'a'));
  testing::WriteFile(root + "/b.bin", std::string(1000, 'b'));
  auto set = OpenLooseDirectory(root, "ds");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  // Replaced with different bytes of another size before the first read.
  testing::WriteFile(root + "/a.bin", std::string(999, 'x'));
  auto node = (*set)->catalog().Find("a.bin");
  ASSERT_TRUE(node.ok() && node->has_value());
  std::vector<uint8_t> buf(1000);
  auto got = (*set)->Read(**node, 0, buf);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("ds/a.bin changed since the mount"), std::string::npos)
      << got.status().ToString();
  EXPECT_EQ(got.status().code(), Code::kStale);
  // The other file is unaffected.
  auto b = (*set)->catalog().Find("b.bin");
  ASSERT_TRUE(b.ok() && b->has_value());
  auto ok = (*set)->Read(**b, 0, buf);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(std::string(buf.begin(), buf.end()), std::string(1000, 'b'));
}

TEST(LooseDir, MemberSourceReadsAPackedMemberAsItsOwnFile) {
  TempDir tmp;
  const std::string src = tmp / "src";
  const std::string data = testing::RandomBytes(100000, 3);
  testing::WriteFile(src + "/x/y.bin", data);
  ASSERT_EQ(testing::Run({testing::MkpackPath(), "pack", src, tmp / "media"}).exit_code, 0);
  OpenSourceOptions options;
  options.loose = OpenSourceOptions::Loose::kAlways;
  auto set = OpenSourceSet(SourceLocation{tmp / "media", {}}, options);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_FALSE((*set)->raw_members());
  auto node = (*set)->catalog().Find("x/y.bin");
  ASSERT_TRUE(node.ok() && node->has_value());
  auto member = (*set)->MemberSource("x/y.bin", **node);
  EXPECT_EQ(member->size(), data.size());
  std::vector<uint8_t> buf(5000);
  auto n = member->ReadAt(98000, buf);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 2000u);
  EXPECT_EQ(std::string(buf.begin(), buf.begin() + 2000), data.substr(98000));
  // A PackInput reading from that source packs the same bytes again.
  PackInput in;
  in.key = "copy.bin";
  in.path = "member x/y.bin";
  in.size = data.size();
  in.whole_file = false;
  in.source = member;
  InputBuffer out;
  uint32_t crc = 0;
  ASSERT_TRUE(ReadInput(in, &out, &crc).ok());
  EXPECT_EQ(std::string(out.begin(), out.end()), data);
  EXPECT_EQ(crc, (*node)->crc32);
}

}  // namespace
}  // namespace packfs
