// A remote pack set behind tests/support/delay_proxy.py (20 ms added to every request round
// trip, as on a distant server): a packfs mount through the proxy serves every file byte for
// byte, every request nginx answered went through the proxy and was held there for the delay,
// and a plain curl through the proxy is held too. Nothing here asserts on packfs's speed; the
// figures are in bench/bench_remote.py.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/support/delay_proxy.h"
#include "tests/support/http_servers.h"
#include "tests/support/mount_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::DelayProxy;
using testing::Mount;
using testing::TempDir;

constexpr double kDelayMs = 20;

std::map<std::string, std::string> TreeFiles(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      out[fs::relative(e.path(), root).string()] = testing::ReadFile(e.path().string());
    }
  }
  return out;
}

size_t Lines(const std::string& text) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += !line.empty();
  return n;
}

std::vector<DelayProxy::Chunk> Requests(const DelayProxy& proxy) {
  std::vector<DelayProxy::Chunk> out;
  for (auto& c : proxy.Log()) {
    if (c.head != "-") out.push_back(c);
  }
  return out;
}

class RemoteLatencyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<TempDir>();
    const TempDir& t = *tmp_;
    for (int i = 0; i < 30; ++i) {
      const size_t size = (static_cast<size_t>(i) * 9973) % 200000;
      testing::WriteFile(t / ("src/d" + std::to_string(i % 3) + "/f" + std::to_string(i)),
                         testing::RandomBytes(size, static_cast<uint64_t>(i) + 7));
    }
    testing::WriteFile(t / "src/big.bin", testing::RandomBytes(3000001, 5));
    ::mkdir((t / "www").c_str(), 0755);
    auto r = testing::Run({testing::MkpackPath(), "pack", t / "src", t / "www/media",
                           "--max-pack-bytes", "512K", "--no-fsync"});
    if (r.exit_code != 0) {
      why_ = std::make_unique<std::string>("mkpack pack failed: " + r.err);
      return;
    }
    std::string why;
    server_ = testing::NginxServer::Start(t / "www", &why);
    if (server_ != nullptr) proxy_ = DelayProxy::Start(server_->port(), kDelayMs, &why);
    if (proxy_ == nullptr) why_ = std::make_unique<std::string>(why);
  }
  static void TearDownTestSuite() {
    proxy_.reset();
    server_.reset();
    tmp_.reset();
    why_.reset();
  }
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse here";
    if (why_ != nullptr) GTEST_SKIP() << *why_;
    ::mkdir((mnt_dir_ / "mnt").c_str(), 0755);
  }
  std::string Mnt() const { return mnt_dir_ / "mnt"; }

  static inline std::unique_ptr<TempDir> tmp_;
  static inline std::unique_ptr<testing::NginxServer> server_;
  static inline std::unique_ptr<DelayProxy> proxy_;
  static inline std::unique_ptr<std::string> why_;
  TempDir mnt_dir_;
};

TEST_F(RemoteLatencyTest, MountThroughTheProxyServesEveryFileAndEveryRequestIsHeld) {
  {
    Mount m({proxy_->url() + "/media"}, Mnt(), {"--cache-dir", mnt_dir_ / "cache"});
    ASSERT_TRUE(m.ok()) << m.result().err;
    const auto want = TreeFiles(*tmp_ / "src");
    const auto got = TreeFiles(Mnt());
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [key, bytes] : want) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << key;
      EXPECT_TRUE(it->second == bytes) << key << ": " << it->second.size() << " vs "
                                       << bytes.size();
    }
  }
  // Every request nginx answered came through the proxy (nginx writes its log line after the
  // response, so wait for the counts to meet), and the proxy held each one for the delay.
  size_t served = 0, proxied = 0;
  for (int i = 0; i < 250; ++i) {
    served = Lines(server_->AccessLog());
    proxied = Requests(*proxy_).size();
    if (served == proxied && served > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(served, 0u);
  EXPECT_EQ(proxied, served) << server_->AccessLog();
  for (const auto& c : Requests(*proxy_)) {
    EXPECT_GE(c.held_ms, kDelayMs - 0.001) << c.head;
  }
}

TEST_F(RemoteLatencyTest, CurlThroughTheProxyIsHeldForTheDelay) {
  if (!testing::HasCommand("curl")) GTEST_SKIP() << "no curl";
  const size_t before = Requests(*proxy_).size();
  auto r = testing::Run({"curl", "-sf", "-r", "100-199", proxy_->url() + "/media/pack-0000.zip"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == testing::ReadFile(*tmp_ / "www/media/pack-0000.zip").substr(100, 100));
  const auto reqs = Requests(*proxy_);
  ASSERT_EQ(reqs.size(), before + 1);
  EXPECT_EQ(reqs.back().head, "GET /media/pack-0000.zip HTTP/1.1");
  EXPECT_GE(reqs.back().held_ms, kDelayMs - 0.001);
}

}  // namespace
}  // namespace packfs
