// Shared fixtures of the remote pack-set tests: served pack sets, tree comparison (see the header).
#include "tests/support/remote_fixture.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

namespace packfs::testing {

std::map<std::string, std::string> TreeFiles(const std::string& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      out[fs::relative(e.path(), root).string()] = ReadFile(e.path().string());
    }
  }
  return out;
}

void ExpectSameFiles(const std::string& want_root, const std::string& got_root) {
  const auto want = TreeFiles(want_root);
  const auto got = TreeFiles(got_root);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, bytes] : want) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << key;
    EXPECT_TRUE(it->second == bytes) << key << ": " << it->second.size() << " vs "
                                     << bytes.size();
  }
}

RunResult PackTree(const std::string& src, const std::string& out,
                   const std::string& max_pack_bytes) {
  return Run({MkpackPath(), "pack", src, out, "--max-pack-bytes", max_pack_bytes, "--no-fsync"});
}

void ClearAwsEnvironment() {
  for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                        "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"}) {
    ::unsetenv(v);
  }
}

void ServedSetTest::ServeSet(const TreeWriter& write_tree, const std::string& max_pack_bytes) {
  tmp_ = std::make_unique<TempDir>();
  write_tree(*tmp_);
  ::mkdir((*tmp_ / "www").c_str(), 0755);
  const RunResult r = PackTree(*tmp_ / "src", *tmp_ / "www/media", max_pack_bytes);
  if (r.exit_code != 0) {
    broken_ = std::make_unique<std::string>("mkpack pack failed: " + r.err);
    return;
  }
  std::string why;
  server_ = NginxServer::Start(*tmp_ / "www", &why);
  if (server_ == nullptr) why_ = std::make_unique<std::string>(why);
}

void ServedSetTest::TearDownTestSuite() {
  server_.reset();
  tmp_.reset();
  why_.reset();
  broken_.reset();
}

void ServedSetTest::SetUp() {
  if (broken_ != nullptr) FAIL() << *broken_;
  if (why_ != nullptr) GTEST_SKIP() << *why_;
}

void ServedSetMountTest::SetUp() {
  if (!FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  ServedSetTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  ::mkdir((mnt_dir_ / "mnt").c_str(), 0755);
}

void FreshServedSetTest::SetUp() {
  if (!FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
  ASSERT_NO_FATAL_FAILURE(WriteTree());
  ::mkdir((tmp_ / "www").c_str(), 0755);
  const RunResult r = PackTree(tmp_ / "src", tmp_ / "www/media", max_pack_bytes_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NO_FATAL_FAILURE(CheckPackedSet());
  std::string why;
  server_ = NginxServer::Start(tmp_ / "www", &why);
  if (!server_) GTEST_SKIP() << why;
  ::mkdir((tmp_ / "mnt").c_str(), 0755);
}

}  // namespace packfs::testing
