// Tests of the core Filesystem without FUSE: lookup, getattr, readdir offsets, reads, xattrs,
// statfs totals, merging of several sources and their collisions, lookups from memory, damaged
// members (headers, and data bytes caught by the CRC-32 checks), the list of recent errors, and
// streaming a directory into the page cache.
#include "core/read/filesystem.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/read/page_cache.h"
#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::TempDir;

constexpr int64_t kMtime = 1700000000;  // even: DOS times have 2-second resolution

void WriteTreeFile(const TempDir& dir, const std::string& tree, const std::string& rel,
                   const std::string& content, mode_t mode = 0644) {
  std::string path = dir / (tree + "/" + rel);
  testing::WriteFile(path, content);
  ::chmod(path.c_str(), mode);
  struct timeval tv[2] = {{kMtime, 0}, {kMtime, 0}};
  ::utimes(path.c_str(), tv);
}

std::unique_ptr<PackSet> OpenSet(const std::string& dir) {
  PackSetOptions opts;
  opts.catalog_use = PackSetOptions::CatalogUse::kNone;
  auto set = PackSet::Open(dir, opts);
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  return set.ok() ? std::move(*set) : nullptr;
}

std::unique_ptr<Filesystem> OpenFs(std::vector<std::string> dirs,
                                   FilesystemOptions opts = {}) {
  std::vector<std::unique_ptr<PackSet>> sets;
  for (const auto& d : dirs) sets.push_back(OpenSet(d));
  auto fs = Filesystem::Open(std::move(sets), opts);
  EXPECT_TRUE(fs.ok()) << fs.status().ToString();
  return fs.ok() ? std::move(*fs) : nullptr;
}

// Resolves "a/b/c" from the root with Lookup.
std::optional<Attr> Resolve(const Filesystem& fs, const std::string& key) {
  Attr cur = *fs.GetAttr(kRootId);
  size_t pos = 0;
  while (pos < key.size()) {
    size_t slash = key.find('/', pos);
    if (slash == std::string::npos) slash = key.size();
    auto r = fs.Lookup(cur.ino, key.substr(pos, slash - pos));
    if (!r.ok() || !*r) return std::nullopt;
    cur = **r;
    pos = slash + 1;
  }
  return cur;
}

std::string ReadAll(const Filesystem& fs, uint64_t ino) {
  std::string out;
  std::vector<uint8_t> buf(7);  // odd size: exercise offsets
  for (;;) {
    auto n = fs.Read(ino, out.size(), buf);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (!n.ok() || *n == 0) return out;
    out.append(reinterpret_cast<char*>(buf.data()), *n);
  }
}

class FilesystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = {{"top.txt", "top level\n"},
              {"a/b/c.txt", "deep file contents"},
              {"a/d.bin", testing::RandomBytes(100000, 7)},
              {"a/empty", ""},
              {"dir with space/x y.txt", "spaces"},
              {"z/\xc3\xa9t\xc3\xa9.txt", "utf-8 name"}};
    for (const auto& [k, v] : files_) WriteTreeFile(tmp_, "tree", k, v);
    WriteTreeFile(tmp_, "tree", "run.sh", "#!/bin/sh\n", 0755);
    files_["run.sh"] = "#!/bin/sh\n";
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 3);
    fs_ = OpenFs({tmp_ / "media"});
    ASSERT_NE(fs_, nullptr);
  }

  TempDir tmp_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<Filesystem> fs_;
};

TEST_F(FilesystemTest, LookupAndGetattr) {
  auto root = fs_->GetAttr(kRootId);
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(root->is_dir());
  EXPECT_EQ(root->mode & 07777, 0555u);
  for (const auto& [key, content] : files_) {
    auto a = Resolve(*fs_, key);
    ASSERT_TRUE(a) << key;
    EXPECT_FALSE(a->is_dir());
    EXPECT_EQ(a->size, content.size()) << key;
    EXPECT_EQ(a->blocks, (content.size() + 511) / 512);
    EXPECT_EQ(a->mtime, kMtime) << key;
    EXPECT_EQ(a->mode & 07777, key == "run.sh" ? 0555u : 0444u) << key;
    auto again = fs_->GetAttr(a->ino);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->size, a->size);
  }
  auto dir = Resolve(*fs_, "a/b");
  ASSERT_TRUE(dir);
  EXPECT_TRUE(dir->is_dir());
}

TEST_F(FilesystemTest, UnknownNamesAndInodes) {
  auto r = fs_->Lookup(kRootId, "nope");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);  // a cacheable negative answer, not an error
  auto file = Resolve(*fs_, "top.txt");
  ASSERT_TRUE(file);
  auto under_file = fs_->Lookup(file->ino, "x");
  ASSERT_FALSE(under_file.ok());
  EXPECT_EQ(under_file.status().err(), ENOTDIR);
  auto bad = fs_->GetAttr(999999);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().err(), ENOENT);
  std::vector<uint8_t> buf(4);
  auto read_dir = fs_->Read(kRootId, 0, buf);
  ASSERT_FALSE(read_dir.ok());
  EXPECT_EQ(read_dir.status().err(), EISDIR);
}

TEST_F(FilesystemTest, ReadDirOffsetsAreStable) {
  std::vector<DirEntry> all;
  ASSERT_TRUE(fs_->ReadDir(kRootId, 0, 1000, &all).ok());
  std::vector<std::string> names;
  for (const auto& e : all) names.push_back(e.name);
  std::vector<std::string> want = {".",   "..",     "a",      "dir with space",
                                   "run.sh", "top.txt", "z"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(all[1].attr.ino, kRootId);  // the root's parent is itself
  // One entry at a time, continuing from each entry's next_offset, gives the same listing.
  std::vector<std::string> paged;
  uint64_t off = 0;
  for (;;) {
    std::vector<DirEntry> one;
    ASSERT_TRUE(fs_->ReadDir(kRootId, off, 1, &one).ok());
    if (one.empty()) break;
    ASSERT_EQ(one.size(), 1u);
    paged.push_back(one[0].name);
    off = one[0].next_offset;
  }
  EXPECT_EQ(paged, want);
  std::vector<DirEntry> past;
  ASSERT_TRUE(fs_->ReadDir(kRootId, 1000, 10, &past).ok());
  EXPECT_TRUE(past.empty());
  auto a = Resolve(*fs_, "a");
  std::vector<DirEntry> sub;
  ASSERT_TRUE(fs_->ReadDir(a->ino, 0, 100, &sub).ok());
  ASSERT_EQ(sub.size(), 5u);
  EXPECT_EQ(sub[1].attr.ino, kRootId);
  EXPECT_EQ(sub[2].name, "b");
  EXPECT_TRUE(sub[2].attr.is_dir());
  EXPECT_EQ(sub[3].name, "d.bin");
  EXPECT_EQ(sub[3].attr.size, 100000u);
  auto file = Resolve(*fs_, "top.txt");
  std::vector<DirEntry> not_dir;
  EXPECT_EQ(fs_->ReadDir(file->ino, 0, 10, &not_dir).err(), ENOTDIR);
}

TEST_F(FilesystemTest, ReadsMatchSourceAtAnyOffset) {
  for (const auto& [key, content] : files_) {
    auto a = Resolve(*fs_, key);
    ASSERT_TRUE(a) << key;
    EXPECT_EQ(ReadAll(*fs_, a->ino), content) << key;
  }
  auto big = Resolve(*fs_, "a/d.bin");
  const std::string& content = files_["a/d.bin"];
  std::vector<uint8_t> buf(5000);
  auto n = fs_->Read(big->ino, 99000, buf);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1000u);  // short read at EOF
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf.data()), 1000), content.substr(99000));
  auto past = fs_->Read(big->ino, 200000, buf);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(*past, 0u);
  // The zero-copy extent points at the right bytes of the shard fd.
  auto ext = fs_->PrepareRead(big->ino, 12345, 4096);
  ASSERT_TRUE(ext.ok()) << ext.status().ToString();
  ASSERT_EQ(ext->length, 4096u);
  std::string raw(4096, '\0');
  ASSERT_EQ(::pread(ext->lease->fd(), raw.data(), raw.size(),
                    static_cast<off_t>(ext->shard_offset)),
            4096);
  EXPECT_EQ(raw, content.substr(12345, 4096));
  auto eof = fs_->PrepareRead(big->ino, 100000, 10);
  ASSERT_TRUE(eof.ok());
  EXPECT_EQ(eof->length, 0u);
}

TEST_F(FilesystemTest, Xattrs) {
  auto a = Resolve(*fs_, "a/b/c.txt");
  auto names = fs_->ListXattr(a->ino);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 5u);
  auto ref = fs_->GetXattr(a->ino, Filesystem::kXattrRef);
  ASSERT_TRUE(ref.ok() && *ref);
  EXPECT_TRUE((*ref)->starts_with("zip://a/b/c.txt::media/pack-")) << **ref;
  auto shard = fs_->GetXattr(a->ino, Filesystem::kXattrShard);
  auto offset = fs_->GetXattr(a->ino, Filesystem::kXattrOffset);
  auto size = fs_->GetXattr(a->ino, Filesystem::kXattrSize);
  ASSERT_TRUE(shard.ok() && *shard && offset.ok() && *offset && size.ok() && *size);
  EXPECT_EQ(**size, "18");
  // The xattrs are enough to read the bytes without packfs.
  std::string shard_bytes = testing::ReadFile(**shard);
  EXPECT_EQ(shard_bytes.substr(std::stoull(**offset), 18), "deep file contents");
  auto crc = fs_->GetXattr(a->ino, Filesystem::kXattrCrc32);
  ASSERT_TRUE(crc.ok() && *crc);
  auto py = testing::Run({"python3", "-c",
                          "import zlib; print('%08x' % zlib.crc32(b'deep file contents'))"});
  EXPECT_EQ(**crc + "\n", py.out);
  auto none = fs_->GetXattr(a->ino, "user.other");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
  auto stats = fs_->GetXattr(kRootId, Filesystem::kXattrStats);
  ASSERT_TRUE(stats.ok() && *stats);
  EXPECT_NE((*stats)->find("\"bytes_served\""), std::string::npos);
  auto json = testing::Run({"python3", "-m", "json.tool"}, **stats);
  EXPECT_EQ(json.exit_code, 0) << **stats;
  auto dir = Resolve(*fs_, "a");
  auto dir_names = fs_->ListXattr(dir->ino);
  ASSERT_TRUE(dir_names.ok());
  EXPECT_TRUE(dir_names->empty());
}

TEST_F(FilesystemTest, Totals) {
  const FsTotals& t = fs_->totals();
  EXPECT_EQ(t.files, files_.size());
  uint64_t bytes = 0;
  for (const auto& [k, v] : files_) bytes += v.size();
  EXPECT_EQ(t.bytes, bytes);
  EXPECT_EQ(t.shards, 3u);  // 7 files, 3 per shard
  EXPECT_EQ(t.directories, 5u);  // root, a, a/b, "dir with space", z
}

TEST_F(FilesystemTest, OwnerAndUmask) {
  std::vector<std::unique_ptr<PackSet>> sets;
  sets.push_back(OpenSet(tmp_ / "media"));
  FilesystemOptions opts;
  opts.uid = 1234;
  opts.gid = 5678;
  opts.umask = 0027;
  auto fs = Filesystem::Open(std::move(sets), opts);
  ASSERT_TRUE(fs.ok());
  auto a = Resolve(**fs, "top.txt");
  EXPECT_EQ(a->uid, 1234u);
  EXPECT_EQ(a->gid, 5678u);
  EXPECT_EQ(a->mode & 07777, 0440u);
  EXPECT_EQ((*fs)->GetAttr(kRootId)->mode & 07777, 0550u);
}

TEST_F(FilesystemTest, DamagedLocalHeaderFailsThatMemberOnly) {
  auto a = Resolve(*fs_, "a/b/c.txt");
  auto shard = fs_->GetXattr(a->ino, Filesystem::kXattrShard);
  auto offset = fs_->GetXattr(a->ino, Filesystem::kXattrOffset);
  // Overwrite the name in the local header (it ends right before the data for Python's zipfile:
  // no extra field), keeping size and mtime so the shard itself still looks unchanged.
  std::string path = **shard;
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  {
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "X", 1, static_cast<off_t>(std::stoull(**offset) - 1)), 1);
    ::close(fd);
  }
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  std::vector<uint8_t> buf(64);
  auto r = fs_->Read(a->ino, 0, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().err(), EIO);
  EXPECT_NE(r.status().message().find("c.txt"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("pack-"), std::string::npos) << r.status().message();
  // Another member of the same shard still reads.
  for (const auto& key : {"a/d.bin", "a/empty", "top.txt"}) {
    auto other = Resolve(*fs_, key);
    auto other_shard = fs_->GetXattr(other->ino, Filesystem::kXattrShard);
    if (**other_shard == path) {
      EXPECT_EQ(ReadAll(*fs_, other->ino), files_[key]) << key;
    }
  }
}

// Flips one byte of `key`'s data at `at` inside its shard, keeping the shard's size and mtime
// (what the catalog and the shard checks compare), so that only the CRC-32 can tell.
void DamageMember(const Filesystem& fs, uint64_t ino, uint64_t at) {
  auto shard = fs.GetXattr(ino, Filesystem::kXattrShard);
  auto offset = fs.GetXattr(ino, Filesystem::kXattrOffset);
  ASSERT_TRUE(shard.ok() && *shard && offset.ok() && *offset);
  ASSERT_TRUE(testing::FlipByteKeepingTimes(**shard, std::stoull(**offset) + at)) << **shard;
}

TEST_F(FilesystemTest, CrcMismatchOfAWholeReadFailsThatMemberOnly) {
  auto a = Resolve(*fs_, "a/b/c.txt");
  DamageMember(*fs_, a->ino, 3);
  std::vector<uint8_t> buf(4096);
  auto r = fs_->Read(a->ino, 0, buf);  // the whole member in one read, as the kernel asks
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().err(), EIO);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("'a/b/c.txt' from media/pack-"), std::string::npos) << m;
  EXPECT_NE(m.find("CRC-32 mismatch"), std::string::npos) << m;
  EXPECT_NE(m.find("mkpack verify"), std::string::npos) << m;
  // From now on every read of it fails, a part too, and the zero-copy path too.
  auto part = fs_->Read(a->ino, 5, std::span<uint8_t>(buf.data(), 4));
  ASSERT_FALSE(part.ok());
  EXPECT_NE(part.status().message().find("failed their CRC-32 check"), std::string::npos);
  EXPECT_FALSE(fs_->PrepareRead(a->ino, 0, 4096).ok());
  // Every other member reads, those of the same shard included.
  for (const auto& [key, content] : files_) {
    if (key == "a/b/c.txt") continue;
    EXPECT_EQ(ReadAll(*fs_, Resolve(*fs_, key)->ino), content) << key;
  }
  auto stats = fs_->GetXattr(kRootId, Filesystem::kXattrStats);
  const nlohmann::json j = nlohmann::json::parse(**stats);
  EXPECT_EQ(j["crc32"]["bad"], 1);
  EXPECT_EQ(j["crc32"]["good"], files_.size() - 2);  // all but c.txt and the empty file
}

TEST_F(FilesystemTest, CrcMismatchInPiecesFailsTheReadThatCompletesIt) {
  auto d = Resolve(*fs_, "a/d.bin");  // 100000 bytes
  DamageMember(*fs_, d->ino, 50000);
  // Read in 10000-byte pieces, last piece first: only the read that completes the member fails.
  std::vector<uint8_t> buf(10000);
  for (uint64_t at = 90000;; at -= 10000) {
    auto r = fs_->Read(d->ino, at, buf);
    if (at == 0) {
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("CRC-32 mismatch"), std::string::npos);
      break;
    }
    ASSERT_TRUE(r.ok()) << at << ": " << r.status().ToString();
  }
  EXPECT_FALSE(fs_->Read(d->ino, 90000, buf).ok());
}

TEST_F(FilesystemTest, ZeroCopyWaitsForTheCrcCheck) {
  auto d = Resolve(*fs_, "a/d.bin");
  auto ext = fs_->PrepareRead(d->ino, 0, 65536);
  ASSERT_TRUE(ext.ok());
  EXPECT_TRUE(ext->copy_to_check);
  EXPECT_EQ(ext->lease, nullptr);
  EXPECT_EQ(ext->length, 65536u);
  EXPECT_EQ(ReadAll(*fs_, d->ino), files_["a/d.bin"]);  // 7-byte reads: judged in pieces
  ext = fs_->PrepareRead(d->ino, 0, 65536);
  ASSERT_TRUE(ext.ok());
  EXPECT_FALSE(ext->copy_to_check);
  ASSERT_NE(ext->lease, nullptr);
  EXPECT_GE(ext->lease->fd(), 0);
}

// The mount's one read call: copied bytes until the member's CRC-32 is judged, a window of the
// shard fd afterwards for reads of at least zero_copy_min bytes, copied bytes below it, nothing
// past the end; every answer holds the file's bytes.
TEST_F(FilesystemTest, ServeReadAnswersWithBytesOrAWindow) {
  auto d = Resolve(*fs_, "a/d.bin");
  const std::string& content = files_["a/d.bin"];
  auto text = [](std::span<const uint8_t> b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  std::vector<uint8_t> scratch;
  // First read, whole member: copied so that its CRC-32 is checked.
  auto first = fs_->ServeRead(d->ino, 0, 1 << 20, 4096, &scratch);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->zero_copy());
  EXPECT_EQ(text(first->bytes), content);
  // Judged good: a large read is a window of the shard.
  auto big = fs_->ServeRead(d->ino, 12345, 8192, 4096, &scratch);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  ASSERT_TRUE(big->zero_copy());
  EXPECT_TRUE(big->bytes.empty());
  ASSERT_EQ(big->window.length, 8192u);
  std::string raw(8192, '\0');
  ASSERT_EQ(::pread(big->window.lease->fd(), raw.data(), raw.size(),
                    static_cast<off_t>(big->window.shard_offset)),
            8192);
  EXPECT_EQ(raw, content.substr(12345, 8192));
  // Below zero_copy_min, or with zero copy off (SIZE_MAX): bytes.
  for (size_t min : {size_t{8193}, SIZE_MAX}) {
    auto small = fs_->ServeRead(d->ino, 12345, 8192, min, &scratch);
    ASSERT_TRUE(small.ok());
    EXPECT_FALSE(small->zero_copy());
    EXPECT_EQ(text(small->bytes), content.substr(12345, 8192));
  }
  // The end of the file clips; past it there is nothing.
  auto tail = fs_->ServeRead(d->ino, content.size() - 100, 8192, SIZE_MAX, &scratch);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(text(tail->bytes), content.substr(content.size() - 100));
  auto past = fs_->ServeRead(d->ino, content.size(), 8192, 4096, &scratch);
  ASSERT_TRUE(past.ok());
  EXPECT_FALSE(past->zero_copy());
  EXPECT_TRUE(past->bytes.empty());
  // A directory is not read.
  auto dir = fs_->ServeRead(Resolve(*fs_, "a")->ino, 0, 10, 4096, &scratch);
  EXPECT_FALSE(dir.ok());
}

TEST_F(FilesystemTest, WithoutCrcChecksDamagedBytesAreServed) {
  std::vector<std::unique_ptr<PackSet>> sets;
  sets.push_back(OpenSet(tmp_ / "media"));
  FilesystemOptions opts;
  opts.verify_crc = false;
  auto fs = Filesystem::Open(std::move(sets), opts);
  ASSERT_TRUE(fs.ok());
  auto a = Resolve(**fs, "a/b/c.txt");
  DamageMember(**fs, a->ino, 3);
  std::string want = files_["a/b/c.txt"];
  want[3] = static_cast<char>(want[3] ^ 0x20);
  EXPECT_EQ(ReadAll(**fs, a->ino), want);
  auto ext = (*fs)->PrepareRead(Resolve(**fs, "a/d.bin")->ino, 0, 65536);
  ASSERT_TRUE(ext.ok());
  EXPECT_FALSE(ext->copy_to_check);
  EXPECT_EQ((*fs)->StatsJson().find("crc32"), std::string::npos);
}

TEST_F(FilesystemTest, RecentErrorsNameFileAndShard) {
  auto errors = fs_->GetXattr(kRootId, Filesystem::kXattrErrors);
  ASSERT_TRUE(errors.ok() && *errors);
  EXPECT_EQ(**errors, "[]");
  auto names = fs_->ListXattr(kRootId);
  ASSERT_TRUE(names.ok());
  EXPECT_NE(std::find(names->begin(), names->end(), Filesystem::kXattrErrors), names->end());
  auto a = Resolve(*fs_, "a/b/c.txt");
  fs_->NoteError(a->ino, "read: something failed");
  fs_->NoteError(Resolve(*fs_, "a")->ino, "readdir: also failed");
  fs_->NoteError(0, "no file in particular");
  const nlohmann::json j = nlohmann::json::parse(**fs_->GetXattr(kRootId, Filesystem::kXattrErrors));
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["path"], "a/b/c.txt");
  EXPECT_EQ(j[0]["shard"].get<std::string>().rfind("media/pack-", 0), 0u) << j;
  EXPECT_EQ(j[0]["message"], "read: something failed");
  EXPECT_EQ(j[1]["path"], "a");
  EXPECT_EQ(j[1]["shard"], "");
  EXPECT_EQ(j[2]["path"], "");
}

class MergeTest : public ::testing::Test {
 protected:
  void Make(const std::string& name, const std::map<std::string, std::string>& files) {
    for (const auto& [k, v] : files) WriteTreeFile(tmp_, name + "-tree", k, v);
    testing::MakePythonPack(tmp_ / (name + "-tree"), tmp_ / (name + "/media"), 2);
  }
  TempDir tmp_;
};

TEST_F(MergeTest, DisjointSourcesMergeIntoOneTree) {
  Make("one", {{"shared/a.txt", "from one"}, {"one.txt", "1"}, {"x/y/z", "zzz"}});
  Make("two", {{"shared/b.txt", "from two"}, {"two.txt", "22"}});
  auto fs = OpenFs({tmp_ / "one/media", tmp_ / "two/media"});
  ASSERT_NE(fs, nullptr);
  EXPECT_EQ(fs->totals().files, 5u);
  EXPECT_EQ(fs->source_count(), 2u);
  std::vector<DirEntry> shared;
  auto dir = Resolve(*fs, "shared");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(fs->ReadDir(dir->ino, 2, 10, &shared).ok());
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].name, "a.txt");
  EXPECT_EQ(shared[1].name, "b.txt");
  EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "shared/a.txt")->ino), "from one");
  EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "shared/b.txt")->ino), "from two");
  EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "two.txt")->ino), "22");
  EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "x/y/z")->ino), "zzz");
  auto ref = fs->GetXattr(Resolve(*fs, "two.txt")->ino, Filesystem::kXattrRef);
  ASSERT_TRUE(ref.ok() && *ref);
  EXPECT_EQ(**ref, "zip://two.txt::media/pack-0000.zip");
  auto shard = fs->GetXattr(Resolve(*fs, "two.txt")->ino, Filesystem::kXattrShard);
  EXPECT_NE((*shard)->find("two/media/pack-0000.zip"), std::string::npos) << **shard;
}

TEST_F(MergeTest, CollisionsFailUnlessAPolicyIsGiven) {
  Make("one", {{"k/same.txt", "first copy"}, {"only1", "1"}});
  Make("two", {{"k/same.txt", "second copy"}, {"only2", "2"}});
  std::vector<std::unique_ptr<PackSet>> sets;
  sets.push_back(OpenSet(tmp_ / "one/media"));
  sets.push_back(OpenSet(tmp_ / "two/media"));
  auto fail = Filesystem::Open(std::move(sets), {});
  ASSERT_FALSE(fail.ok());
  EXPECT_NE(fail.status().message().find("k/same.txt"), std::string::npos)
      << fail.status().message();
  EXPECT_NE(fail.status().message().find("--on-collision"), std::string::npos);
  for (auto policy : {FilesystemOptions::OnCollision::kFirst,
                      FilesystemOptions::OnCollision::kLast}) {
    FilesystemOptions opts;
    opts.on_collision = policy;
    auto fs = OpenFs({tmp_ / "one/media", tmp_ / "two/media"}, opts);
    ASSERT_NE(fs, nullptr);
    EXPECT_EQ(fs->totals().files, 3u);
    EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "k/same.txt")->ino),
              policy == FilesystemOptions::OnCollision::kFirst ? "first copy" : "second copy");
    EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "only1")->ino), "1");
    EXPECT_EQ(ReadAll(*fs, Resolve(*fs, "only2")->ino), "2");
  }
}

TEST_F(MergeTest, FileAgainstDirectoryFails) {
  Make("one", {{"a", "a file"}});
  Make("two", {{"a/b", "under a directory"}});
  std::vector<std::unique_ptr<PackSet>> sets;
  sets.push_back(OpenSet(tmp_ / "one/media"));
  sets.push_back(OpenSet(tmp_ / "two/media"));
  FilesystemOptions opts;
  opts.on_collision = FilesystemOptions::OnCollision::kFirst;
  auto fs = Filesystem::Open(std::move(sets), opts);
  EXPECT_FALSE(fs.ok());
}


// Lookups in a directory looked up in often are answered from memory (core/read/dir_names.h)
// after the first DirNames::kLoadAfter: every name, before and after, gives the same node, and
// names that are not there (between, before and after the held ones, in byte order) stay absent.
// In a merged tree too, where the directory's children come from two sources.
// Streaming (core/read/dir_stream.h): StreamDir reads the directory's extent of its shard into
// the page cache, and not the next directory's; once per directory; a file or an unknown inode
// streams nothing.
TEST(FilesystemStreamTest, StreamDirReadsTheDirectorysExtentIntoThePageCache) {
  TempDir tmp("/var/tmp");  // on disk: a tmpfs file's page cache cannot be dropped
  std::map<std::string, std::string> files;
  for (int i = 0; i < 32; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "%02d.bin", i);
    files[std::string("d/") + name] = testing::RandomBytes(64 << 10, i + 1);
    files[std::string("e/") + name] = testing::RandomBytes(64 << 10, i + 101);
  }
  for (const auto& [k, v] : files) WriteTreeFile(tmp, "tree", k, v);
  testing::MakePythonPack(tmp / "tree", tmp / "media", 1000);
  FilesystemOptions opts;
  opts.stream_dirs = true;
  opts.stream_room = [] { return std::optional<uint64_t>(1ull << 40); };
  auto fs = OpenFs({tmp / "media"}, opts);
  ASSERT_NE(fs, nullptr);
  auto xattr = [&](const std::string& key, const char* name) {
    auto a = Resolve(*fs, key);
    EXPECT_TRUE(a) << key;
    auto v = fs->GetXattr(a ? a->ino : 0, name);
    EXPECT_TRUE(v.ok() && *v) << key << " " << name;
    return v.ok() && *v ? **v : std::string();
  };
  auto offset = [&](const std::string& key) {
    return std::stoull(xattr(key, Filesystem::kXattrOffset));
  };
  const std::string shard = xattr("d/00.bin", Filesystem::kXattrShard);
  ASSERT_EQ(shard, xattr("e/31.bin", Filesystem::kXattrShard));
  const int fd = ::open(shard.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << shard;
  ::fdatasync(fd);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  auto cached = [&](uint64_t from, uint64_t to) {
    std::optional<PageCacheState> st = CacheStateOf(fd, from, to - from);
    return st ? st->cached : UINT64_MAX;
  };
  const uint64_t d_from = offset("d/00.bin"), d_to = offset("d/31.bin") + (64 << 10);
  const uint64_t e_from = offset("e/01.bin"), e_to = offset("e/31.bin") + (64 << 10);
  ASSERT_LT(d_to, e_from);
  if (cached(0, e_to) == UINT64_MAX) {
    ::close(fd);
    GTEST_SKIP() << "no cachestat(2) on this kernel";
  }
  ASSERT_EQ(cached(0, e_to), 0u) << "the page cache of " << shard << " could not be dropped";
  fs->StreamDir(Resolve(*fs, "d")->ino);
  fs->StreamDir(Resolve(*fs, "d")->ino);
  fs->StreamDir(Resolve(*fs, "e/00.bin")->ino);  // a file: nothing
  fs->StreamDir(1u << 30);                        // no such inode: nothing
  fs->DrainStreams();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // Read in whole; reclaim driven by tests running beside this one may take a few pages back.
  EXPECT_GE(cached(d_from, d_to) * 10, ((d_to / page) - (d_from + page - 1) / page) * 9);
  EXPECT_EQ(cached(e_from, e_to), 0u);
  ::close(fd);
  nlohmann::json j = nlohmann::json::parse(fs->StatsJson(), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["dir_stream"]["extents"].get<int>(), 1);
  EXPECT_GE(j["dir_stream"]["bytes"].get<uint64_t>(), d_to - d_from);
  for (const auto& [key, content] : files) {
    EXPECT_EQ(ReadAll(*fs, Resolve(*fs, key)->ino), content) << key;
  }
}

TEST_F(MergeTest, LookupsAnswerTheSameOnceADirectoryIsHeldInMemory) {
  std::map<std::string, std::string> one, two;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    // Mixed case, digits and UTF-8: byte order differs from a case-blind or locale order.
    std::string name = (i % 3 == 0 ? "B" : i % 3 == 1 ? "a" : "\xc3\xa9") + std::to_string(i);
    names.push_back(name);
    (i % 2 ? one : two)["d/" + name] = std::string(static_cast<size_t>(i) + 1, 'x');
  }
  Make("one", one);
  Make("two", two);
  auto fs = OpenFs({tmp_ / "one/media", tmp_ / "two/media"});
  ASSERT_NE(fs, nullptr);
  auto dir = Resolve(*fs, "d");
  ASSERT_TRUE(dir);
  std::map<std::string, uint64_t> ino;
  for (int round = 0; round < 3; ++round) {  // 120 lookups: well past kLoadAfter
    for (size_t i = 0; i < names.size(); ++i) {
      auto r = fs->Lookup(dir->ino, names[i]);
      ASSERT_TRUE(r.ok() && *r) << names[i] << " round " << round;
      EXPECT_EQ((*r)->size, i + 1) << names[i];
      if (round == 0) ino[names[i]] = (*r)->ino;
      EXPECT_EQ((*r)->ino, ino[names[i]]) << names[i] << " round " << round;
    }
    for (const char* absent : {"", "0", "A", "B", "B00", "a", "zz", "\xc3", "\xff"}) {
      auto r = fs->Lookup(dir->ino, absent);
      ASSERT_TRUE(r.ok()) << absent;
      EXPECT_FALSE(*r) << absent << " round " << round;
    }
  }
  // The directory was held, and answered the lookups after the kLoadAfter-th.
  auto stats = fs->GetXattr(kRootId, Filesystem::kXattrStats);
  ASSERT_TRUE(stats.ok() && *stats);
  auto held = nlohmann::json::parse(**stats)["lookups_in_memory"];
  EXPECT_EQ(held["dirs"], 1) << held;
  EXPECT_EQ(held["nodes"], 40) << held;
  EXPECT_EQ(held["answered"], 3 * (40 + 9) - DirNames::kLoadAfter) << held;
  auto file = fs->Lookup(dir->ino, names[5]);
  ASSERT_TRUE(file.ok() && *file);
  EXPECT_EQ(ReadAll(*fs, (*file)->ino), std::string(6, 'x'));
}
}  // namespace
}  // namespace packfs
