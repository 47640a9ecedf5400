// Real mounts of a pack set on nginx whose catalog is read in place (--catalog-download-limit
// below its size, as for any catalog over 1 MiB): every file serves its bytes, the catalog is
// never downloaded whole, a later mount with the same disk cache reads the catalog's pages from
// disk (one request for the catalog: the first one, which revalidates it), and a catalog replaced
// on the server under a mount fails the lookups that need new pages with EIO and advice to
// remount, while what the mount already read keeps answering.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "tests/support/http_servers.h"
#include "tests/support/mount_util.h"
#include "tests/support/remote_fixture.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::Mount;
using testing::TempDir;

constexpr int kDirs = 30;
constexpr int kPerDir = 100;

std::string KeyOf(int d, int f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "d%02d/f%03d.bin", d, f);
  return buf;
}

// Access-log lines naming the catalog, once the log stops growing.
size_t CatalogRequests(const testing::NginxServer& server) {
  return server.SettledRequests("/.packfs-catalog.sqlite");
}

class RemoteCatalogMountTest : public testing::FreshServedSetTest {
 protected:
  RemoteCatalogMountTest() : FreshServedSetTest("64K") {}
  // 3,000 members: a catalog of several 64 KiB blocks, the files of d00 near its start, those of
  // d15 in its middle.
  void WriteTree() override {
    for (int d = 0; d < kDirs; ++d) {
      for (int f = 0; f < kPerDir; ++f) {
        testing::WriteFile(tmp_ / ("src/" + KeyOf(d, f)),
                           testing::RandomBytes(static_cast<size_t>(f * 13 + d), d * 1000 + f));
      }
    }
  }
  void CheckPackedSet() override {
    ASSERT_GT(fs::file_size(tmp_ / "www/media/.packfs-catalog.sqlite"), 3u * 65536);
  }
  std::vector<std::string> Args(bool disk) const {
    std::vector<std::string> args = {"--catalog-download-limit", "4K", "--cache-dir",
                                     tmp_ / "cat", "--cache-size", "16M"};
    if (disk) {
      args.insert(args.end(), {"--disk-cache", tmp_ / "disk"});
    }
    return args;
  }
  void ExpectTreeIsSource() {
    size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(tmp_ / "src")) {
      if (!e.is_regular_file()) continue;
      const std::string key = fs::relative(e.path(), tmp_ / "src").string();
      ASSERT_TRUE(testing::ReadFile(tmp_ / ("mnt/" + key)) == testing::ReadFile(e.path()))
          << key;
      ++files;
    }
    EXPECT_EQ(files, static_cast<size_t>(kDirs * kPerDir));
    size_t listed = 0;
    for (const auto& e : fs::recursive_directory_iterator(tmp_ / "mnt")) {
      listed += e.is_regular_file();
    }
    EXPECT_EQ(listed, files);
  }
  std::string Errors() const {
    return testing::XattrJson(tmp_ / "mnt", "user.packfs.errors").dump();
  }
};

TEST_F(RemoteCatalogMountTest, InPlaceCatalogServesTheSetAndALaterMountReadsItsPagesFromDisk) {
  const size_t before = CatalogRequests(*server_);
  {
    Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args(true));
    ASSERT_TRUE(m.ok()) << m.result().err;
    ExpectTreeIsSource();
  }
  const size_t first = CatalogRequests(*server_) - before;
  EXPECT_GT(first, 1u) << server_->AccessLog();  // the first bytes, then pages as needed
  // Never downloaded whole: the catalog cache holds no copy of it.
  for (const auto& e : fs::directory_iterator(tmp_ / "cat")) {
    EXPECT_NE(e.path().extension(), ".sqlite") << e.path();
  }
  ASSERT_FALSE(testing::IsMounted(tmp_ / "mnt"));
  const size_t again = CatalogRequests(*server_);
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args(true));
  ASSERT_TRUE(m.ok()) << m.result().err;
  ExpectTreeIsSource();
  // One request for the catalog: a conditional one (304 Not Modified) for the ETag of the
  // pages the first mount cached.
  EXPECT_EQ(CatalogRequests(*server_), again + 1) << server_->AccessLog();
}

TEST_F(RemoteCatalogMountTest, ACatalogReplacedUnderTheMountFailsLookupsThatNeedNewPages) {
  Mount m({server_->url() + "/media"}, tmp_ / "mnt", Args(false));
  ASSERT_TRUE(m.ok()) << m.result().err;
  struct stat st;
  ASSERT_EQ(::stat((tmp_ / ("mnt/" + KeyOf(0, 0))).c_str(), &st), 0) << std::strerror(errno);
  EXPECT_EQ(st.st_size, 0);
  // Another valid catalog (of other files) replaces it, with a later mtime: a new ETag.
  testing::WriteFile(tmp_ / "other/x/y.bin", "other");
  auto r = testing::Run({testing::MkpackPath(), "pack", tmp_ / "other", tmp_ / "other-pack",
                         "--no-fsync"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::Sh("cp '" + (tmp_ / "other-pack/.packfs-catalog.sqlite") + "' '" +
                  (tmp_ / "www/media/.cat.tmp") + "' && touch -d '2030-01-01' '" +
                  (tmp_ / "www/media/.cat.tmp") + "' && mv '" + (tmp_ / "www/media/.cat.tmp") +
                  "' '" + (tmp_ / "www/media/.packfs-catalog.sqlite") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // d15's rows sit in pages the mount has not read (opening read the first and the last ones):
  // their GET requires the old ETag (412).
  EXPECT_NE(::stat((tmp_ / ("mnt/" + KeyOf(kDirs / 2, kPerDir / 2))).c_str(), &st), 0);
  EXPECT_EQ(errno, EIO);
  const std::string errors = Errors();
  EXPECT_NE(errors.find("remount"), std::string::npos) << errors;
  EXPECT_NE(errors.find(".packfs-catalog.sqlite"), std::string::npos) << errors;
  // What was read before still answers.
  EXPECT_EQ(::stat((tmp_ / ("mnt/" + KeyOf(0, 0))).c_str(), &st), 0) << std::strerror(errno);
  EXPECT_EQ(::stat((tmp_ / "mnt/d00").c_str(), &st), 0) << std::strerror(errno);
}

}  // namespace
}  // namespace packfs
