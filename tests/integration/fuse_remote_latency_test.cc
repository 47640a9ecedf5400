// A remote pack set behind tests/support/delay_proxy.py (20 ms added to every request round
// trip, as on a distant server): a packfs mount through the proxy serves every file byte for
// byte, every request nginx answered went through the proxy and was held there for the delay,
// and a plain curl through the proxy is held too. Nothing here asserts on packfs's speed; the
// figures are in bench/bench_remote.py.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/support/delay_proxy.h"
#include "tests/support/http_servers.h"
#include "tests/support/mount_util.h"
#include "tests/support/remote_fixture.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::DelayProxy;
using testing::Mount;
using testing::TempDir;

constexpr double kDelayMs = 20;

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

class RemoteLatencyTest : public testing::ServedSetMountTest {
 protected:
  static void SetUpTestSuite() {
    ServeSet(
        [](const TempDir& t) {
          for (int i = 0; i < 30; ++i) {
            const size_t size = (static_cast<size_t>(i) * 9973) % 200000;
            testing::WriteFile(t / ("src/d" + std::to_string(i % 3) + "/f" + std::to_string(i)),
                               testing::RandomBytes(size, static_cast<uint64_t>(i) + 7));
          }
          testing::WriteFile(t / "src/big.bin", testing::RandomBytes(3000001, 5));
        },
        "512K");
    if (server_ == nullptr) return;
    std::string why;
    proxy_ = DelayProxy::Start(server_->port(), kDelayMs, &why);
    if (proxy_ == nullptr) why_ = std::make_unique<std::string>(why);
  }
  static void TearDownTestSuite() {
    proxy_.reset();
    ServedSetMountTest::TearDownTestSuite();
  }

  static inline std::unique_ptr<DelayProxy> proxy_;
};

TEST_F(RemoteLatencyTest, MountThroughTheProxyServesEveryFileAndEveryRequestIsHeld) {
  {
    Mount m({proxy_->url() + "/media"}, Mnt(), CacheArgs());
    ASSERT_TRUE(m.ok()) << m.result().err;
    ASSERT_NO_FATAL_FAILURE(testing::ExpectSameFiles(*tmp_ / "src", Mnt()));
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
