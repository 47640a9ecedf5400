// Shared fixtures of the remote pack-set tests: a source tree packed by `mkpack pack` and served
// by nginx (for a whole suite, or afresh for each test), moto S3 with a signing user on top of a
// suite, and the byte-for-byte comparison of a mounted tree with its source.
// Layout of a set's TempDir: src/ (the tree), www/media/ (the pack set), www/ (nginx's root),
// mnt/ (per-test fixtures' mountpoint). Suites keep their servers in static members (gtest's
// SetUpTestSuite is static); a derived suite shares its base's. Not thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "tests/support/http_servers.h"
#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs::testing {

// The regular files under `root`, key (path relative to root) -> bytes.
std::map<std::string, std::string> TreeFiles(const std::string& root);

// Checks that `got_root` holds the regular files of `want_root`, no more and byte for byte. A
// missing key or a different count is a fatal failure of this helper: call it in
// ASSERT_NO_FATAL_FAILURE to end the test there too.
void ExpectSameFiles(const std::string& want_root, const std::string& got_root);

// `mkpack pack SRC OUT --max-pack-bytes MAX --no-fsync`.
RunResult PackTree(const std::string& src, const std::string& out,
                   const std::string& max_pack_bytes);

// Unsets the AWS_* variables packfs and mkpack take credentials and endpoints from, so that the
// programs a test runs see only what the test sets.
void ClearAwsEnvironment();

// Writes the source tree under `dir`/src.
using TreeWriter = std::function<void(const TempDir& dir)>;

// A suite over one pack set, made once in the derived suite's SetUpTestSuite by ServeSet and
// dropped by TearDownTestSuite. When nginx cannot run here every test skips; when mkpack fails
// every test fails.
class ServedSetTest : public ::testing::Test {
 protected:
  // Writes the tree, packs it into tmp_/www/media and starts nginx on tmp_/www.
  static void ServeSet(const TreeWriter& write_tree, const std::string& max_pack_bytes);
  static void TearDownTestSuite();
  void SetUp() override;

  static inline std::unique_ptr<TempDir> tmp_;
  static inline std::unique_ptr<NginxServer> server_;
  static inline std::unique_ptr<std::string> why_;     // why every test skips
  static inline std::unique_ptr<std::string> broken_;  // why every test fails
};

// A ServedSetTest whose tests mount it: they skip without FUSE, and each has its own mnt_dir_
// (mountpoint Mnt(), catalog cache CacheArgs()).
class ServedSetMountTest : public ServedSetTest {
 protected:
  void SetUp() override;
  std::string Mnt() const { return mnt_dir_ / "mnt"; }
  std::vector<std::string> CacheArgs() const { return {"--cache-dir", mnt_dir_ / "cache"}; }

  TempDir mnt_dir_;
};

// A pack set made afresh for each test (for tests that change it on the server), mounted at
// tmp_/mnt: SetUp skips without FUSE, writes the tree with WriteTree(), packs it (a failure when
// mkpack fails), runs CheckPackedSet(), then starts nginx (skips when it cannot run here).
class FreshServedSetTest : public ::testing::Test {
 protected:
  explicit FreshServedSetTest(std::string max_pack_bytes)
      : max_pack_bytes_(std::move(max_pack_bytes)) {}
  virtual void WriteTree() = 0;
  virtual void CheckPackedSet() {}
  void SetUp() override;

  TempDir tmp_;
  std::unique_ptr<NginxServer> server_;

 private:
  std::string max_pack_bytes_;
};

// Adds to a suite `Base` (a ServedSetTest) moto_server holding objects that StartMoto's boto3
// `setup` puts there, and an IAM user allowed everything (user_). Each test starts with no
// AWS_* variables set and ends with the credentials SignIn set removed.
template <class Base>
class WithSignedS3 : public Base {
 protected:
  // For the derived suite's SetUpTestSuite, after Base's set is made (nothing when it is not).
  static void StartMoto(const std::string& setup) {
    if (Base::why_ != nullptr || Base::broken_ != nullptr) return;
    std::string why;
    moto_ = MotoServer::Start(&why);
    if (moto_ == nullptr) {
      Base::why_ = std::make_unique<std::string>(why);
      return;
    }
    user_ = std::make_unique<MotoServer::Credentials>(moto_->SetUpWithUser(setup));
  }
  static void TearDownTestSuite() {
    moto_.reset();
    user_.reset();
    Base::TearDownTestSuite();
  }
  void SetUp() override {
    Base::SetUp();
    ClearAwsEnvironment();  // credentials reach packfs and mkpack through it, as for a user
  }
  void TearDown() override { ClearAwsEnvironment(); }
  // Turns moto's authentication on and signs as user_ with `secret` (its own or a wrong one).
  void SignIn(const std::string& secret) const {
    moto_->SetAuth(true);
    ::setenv("AWS_ACCESS_KEY_ID", user_->key.c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", secret.c_str(), 1);
  }

  static inline std::unique_ptr<MotoServer> moto_;
  static inline std::unique_ptr<MotoServer::Credentials> user_;
};

}  // namespace packfs::testing
