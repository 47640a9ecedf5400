// Filesystem::ReadThrough and its FollowerClaims: a read that reaches the end of a small file
// brings the files that follow it in its shard that the claims let it take, reads past those not
// wanted, ends its window at the first file another read has taken (that read brings what
// follows), and gives back every file it took but does not bring (here: one whose bytes fail
// their CRC-32). Without a FUSE mount: the claims are this test's own record of takes.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/read/filesystem.h"
#include "core/read/follower_claims.h"
#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::TempDir;

constexpr int kFiles = 20;

class RecordedClaims final : public FollowerClaims {
 public:
  bool Wanted(uint64_t ino) const override {
    return !unwanted.count(ino) && !elsewhere.count(ino) && !taken.count(ino);
  }
  Take TakeFollower(uint64_t ino) override {
    if (elsewhere.count(ino) || taken.count(ino)) return Take::kStop;
    if (!Wanted(ino)) return Take::kSkip;
    taken.insert(ino);
    return Take::kTaken;
  }
  void GiveBack(uint64_t ino) override {
    EXPECT_EQ(taken.erase(ino), 1u) << "given back but not taken: " << ino;
    given_back.push_back(ino);
  }

  std::set<uint64_t> unwanted;   // read already
  std::set<uint64_t> elsewhere;  // taken by another read
  std::set<uint64_t> taken;
  std::vector<uint64_t> given_back;
};

class FollowerClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < kFiles; ++i) {
      files_.push_back(testing::RandomBytes(8192 + 100 * static_cast<size_t>(i), i + 1));
      testing::WriteFile(tmp_ / ("tree/d/" + Name(i)), files_.back());
    }
    testing::MakePythonPack(tmp_ / "tree", tmp_ / "media", 1000);
    PackSetOptions set_opts;
    set_opts.catalog_use = PackSetOptions::CatalogUse::kNone;
    auto set = PackSet::Open(tmp_ / "media", set_opts);
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    std::vector<std::unique_ptr<PackSet>> sets;
    sets.push_back(std::move(*set));
    auto fs = Filesystem::Open(std::move(sets), {});
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    fs_ = std::move(*fs);
    auto d = fs_->Lookup(kRootId, "d");
    ASSERT_TRUE(d.ok() && *d);
    for (int i = 0; i < kFiles; ++i) {
      auto f = fs_->Lookup((*d)->ino, Name(i));
      ASSERT_TRUE(f.ok() && *f) << Name(i);
      ino_.push_back((*f)->ino);
    }
    for (int i = 1; i < kFiles; ++i) ASSERT_EQ(ino_[i], ino_[0] + i) << "siblings in shard order";
  }

  static std::string Name(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d.bin", i);
    return buf;
  }

  // Reads file i whole through ReadThrough with a 1 MiB window; the files it brings, by index.
  std::vector<int> ReadThrough(int i, RecordedClaims& claims) {
    std::vector<uint8_t> scratch;
    std::vector<Filesystem::Follower> followers;
    uint64_t dir = 0;
    auto got = fs_->ReadThrough(
        ino_[i], 0, files_[i].size(), 1 << 20, SIZE_MAX, [](uint64_t) { return true; }, claims,
        0, &scratch, &followers, &dir);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok()) return {};
    EXPECT_EQ(std::string(got->bytes.begin(), got->bytes.end()), files_[i]);
    std::vector<int> out;
    for (const Filesystem::Follower& f : followers) {
      const int at = static_cast<int>(f.ino - ino_[0]);
      EXPECT_EQ(std::string(f.data.begin(), f.data.end()), files_[at]) << Name(at);
      EXPECT_TRUE(claims.taken.count(f.ino)) << Name(at) << " brought but not taken";
      out.push_back(at);
    }
    return out;
  }

  TempDir tmp_;
  std::vector<std::string> files_;
  std::vector<uint64_t> ino_;
  std::unique_ptr<Filesystem> fs_;
};

TEST_F(FollowerClaimsTest, AWindowEndsAtTheFirstFileAnotherReadTook) {
  RecordedClaims claims;
  claims.unwanted = {ino_[5]};    // read already: read past, not brought
  claims.elsewhere = {ino_[9]};   // another read brings 9 and what follows
  EXPECT_EQ(ReadThrough(3, claims), (std::vector<int>{4, 6, 7, 8}));
  EXPECT_EQ(claims.taken.size(), 4u);
  EXPECT_TRUE(claims.given_back.empty());
  // A read whose next file is taken brings nothing.
  RecordedClaims next;
  next.elsewhere = {ino_[11]};
  EXPECT_TRUE(ReadThrough(10, next).empty());
  EXPECT_TRUE(next.taken.empty());
  // Nothing taken elsewhere: the window runs to the directory's end.
  RecordedClaims open;
  EXPECT_EQ(ReadThrough(15, open), (std::vector<int>{16, 17, 18, 19}));
}

TEST_F(FollowerClaimsTest, AFileTakenButNotBroughtIsGivenBack) {
  // Damage one byte of 07.bin's data, keeping the shard's size and mtime: only its CRC-32 tells.
  auto shard = fs_->GetXattr(ino_[7], Filesystem::kXattrShard);
  auto offset = fs_->GetXattr(ino_[7], Filesystem::kXattrOffset);
  ASSERT_TRUE(shard.ok() && *shard && offset.ok() && *offset);
  ASSERT_TRUE(testing::FlipByteKeepingTimes(**shard, std::stoull(**offset) + 10)) << **shard;

  RecordedClaims claims;
  claims.elsewhere = {ino_[10]};
  EXPECT_EQ(ReadThrough(5, claims), (std::vector<int>{6, 8, 9}));
  EXPECT_EQ(claims.given_back, (std::vector<uint64_t>{ino_[7]}));
  EXPECT_EQ(claims.taken, (std::set<uint64_t>{ino_[6], ino_[8], ino_[9]}));
}

}  // namespace
}  // namespace packfs
