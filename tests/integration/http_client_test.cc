// HttpClient, RemoteShardSource and URL helpers against real servers on loopback: nginx for
// correct ranged reads and connection reuse, fault_server.py for retries, refusals and timeouts.
#include "core/remote/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/remote/remote_source.h"
#include "core/remote/remote_store.h"
#include "core/remote/url.h"
#include "tests/support/http_servers.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::FaultServer;
using testing::NginxServer;
using testing::RandomBytes;
using testing::TempDir;
using testing::WriteFile;

constexpr size_t kDataSize = (3u << 20) + 12345;  // 3 MiB and an odd tail

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

HttpOptions FastRetries() {
  HttpOptions o;
  o.max_attempts = 5;
  o.backoff_base = std::chrono::milliseconds(5);
  o.backoff_max = std::chrono::milliseconds(50);
  o.request_timeout = std::chrono::milliseconds(30000);
  return o;
}

std::shared_ptr<HttpClient> Client(HttpOptions o = FastRetries()) {
  auto c = HttpClient::Create(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

// ---- URL helpers (pure) ----------------------------------------------------------------------

TEST(UrlTest, ParsesHttpAndS3) {
  auto u = ParseUrl("HTTPS://Example.COM:8443/data/set");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "example.com");
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(u->path, "/data/set");
  EXPECT_EQ(u->ToString(), "https://example.com:8443/data/set");

  auto v6 = ParseUrl("http://[::1]:81");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->path, "/");
  EXPECT_EQ(v6->ToString(), "http://[::1]:81/");

  auto s3 = ParseUrl("s3://my-bucket/datasets/a/");
  ASSERT_TRUE(s3.ok());
  EXPECT_TRUE(s3->is_s3());
  EXPECT_EQ(s3->host, "my-bucket");
  EXPECT_EQ(s3->path, "datasets/a/");

  EXPECT_TRUE(IsRemoteLocation("S3://b/x"));
  EXPECT_FALSE(IsRemoteLocation("/data/media"));
}

TEST(UrlTest, RejectsBadUrls) {
  for (const char* bad : {"ftp://h/x", "http://", "http://h:0/", "http://h:99999/", "http://h:x/",
                          "http://user:pw@h/", "http://h/x?y=1", "http://h/a b", "s3://A_B/x",
                          "s3://ab/x", "nohost", "http://[::1/"}) {
    auto r = ParseUrl(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
      EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
    }
  }
}

TEST(UrlTest, JoinEncodesSegmentsAndRefusesEscapes) {
  auto base = ParseUrl("http://h/root");
  ASSERT_TRUE(base.ok());
  auto j = JoinUrl(*base, "media/pack 0#1?.zip");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->ToString(), "http://h/root/media/pack%200%231%3F.zip");
  auto j2 = JoinUrl(*ParseUrl("http://h/root/"), "a.zip");
  EXPECT_EQ(j2->ToString(), "http://h/root/a.zip");
  auto s3 = JoinUrl(*ParseUrl("s3://bkt/pre"), "media/p q.zip");
  EXPECT_EQ(s3->path, "pre/media/p q.zip");  // raw key; encoding happens when addressing
  for (const char* bad : {"../x", "a/../b", "/abs", "a//b", "", "a/./b"}) {
    EXPECT_FALSE(JoinUrl(*base, bad).ok()) << bad;
  }
  EXPECT_EQ(PercentEncode("a b/ü~", true), "a%20b/%C3%BC~");
  EXPECT_EQ(PercentEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(*PercentDecode("a%20b%2f"), "a b/");
  EXPECT_FALSE(PercentDecode("a%2").ok());
  EXPECT_FALSE(PercentDecode("a%zz").ok());
}

TEST(HttpClientTest, RejectsZeroConnections) {
  HttpOptions o;
  o.max_connections = 0;
  EXPECT_EQ(HttpClient::Create(o).status().code(), Code::kInvalidArgument);
}

// ---- answer classification and backoff (pure) ------------------------------------------------

TEST(HttpPolicyTest, RetriesServerErrorsAndThrottlingOnly) {
  for (long status : {500L, 502L, 503L, 504L, 599L, 429L, 408L}) {
    EXPECT_TRUE(http_policy::RetryableHttpStatus(status)) << status;
  }
  for (long status : {400L, 401L, 403L, 404L, 409L, 412L, 416L, 499L}) {
    EXPECT_FALSE(http_policy::RetryableHttpStatus(status)) << status;
  }
}

TEST(HttpPolicyTest, StatusErrorsNameTheRequestAndCarryTheirErrno) {
  const Status missing = http_policy::HttpStatusError("GET http://h/x", 404, "Not Found", "");
  EXPECT_EQ(missing.code(), Code::kNotFound);
  EXPECT_EQ(missing.err(), ENOENT);
  EXPECT_EQ(missing.message(), "GET http://h/x: HTTP 404 Not Found");

  const Status denied = http_policy::HttpStatusError(
      "HEAD http://h/b/k", 403, "Forbidden",
      "<Error><Code>SignatureDoesNotMatch</Code><Message>bad signature</Message></Error>");
  EXPECT_EQ(denied.code(), Code::kIOError);
  EXPECT_EQ(denied.err(), EACCES);
  EXPECT_EQ(denied.message().rfind("HEAD http://h/b/k: HTTP 403 Forbidden "
                                   "(SignatureDoesNotMatch: bad signature); check the credentials",
                                   0),
            0u)
      << denied.message();
  EXPECT_EQ(http_policy::HttpStatusError("GET u", 401, "", "").err(), EACCES);

  const Status busy =
      http_policy::HttpStatusError("GET u", 503, "", "<Error><Code>SlowDown</Code></Error>");
  EXPECT_EQ(busy.code(), Code::kIOError);
  EXPECT_EQ(busy.err(), EIO);
  EXPECT_EQ(busy.message(), "GET u: HTTP 503 (SlowDown)");
}

TEST(HttpPolicyTest, BackoffCapDoublesFromTheBaseUpToTheMaximum) {
  HttpOptions o;
  o.backoff_base = std::chrono::milliseconds(100);
  o.backoff_max = std::chrono::milliseconds(5000);
  EXPECT_EQ(http_policy::BackoffCap(o, 1), std::chrono::milliseconds(100));  // before try 2
  EXPECT_EQ(http_policy::BackoffCap(o, 2), std::chrono::milliseconds(200));
  EXPECT_EQ(http_policy::BackoffCap(o, 3), std::chrono::milliseconds(400));
  EXPECT_EQ(http_policy::BackoffCap(o, 6), std::chrono::milliseconds(3200));
  EXPECT_EQ(http_policy::BackoffCap(o, 7), std::chrono::milliseconds(5000));
  // A long run of tries neither overflows nor passes the maximum.
  EXPECT_EQ(http_policy::BackoffCap(o, 1000), std::chrono::milliseconds(5000));
  o.backoff_base = std::chrono::milliseconds(0);
  EXPECT_EQ(http_policy::BackoffCap(o, 5), std::chrono::milliseconds(0));
}

TEST(HttpPolicyTest, BackoffDelayIsJitteredUnderTheCapAndTheDeadline) {
  HttpOptions o;
  o.backoff_base = std::chrono::milliseconds(10);
  o.backoff_max = std::chrono::milliseconds(1000);
  std::mt19937_64 rng(3);
  const std::chrono::milliseconds plenty(60000);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const auto d = http_policy::BackoffDelay(o, 3, plenty, rng);  // cap 40 ms
    EXPECT_GE(d.count(), 0);
    EXPECT_LE(d.count(), 40);
    seen.insert(d.count());
  }
  // Full jitter: the whole range is used, both ends included.
  EXPECT_EQ(seen.size(), 41u);
  // Never past what is left of the request's time, never negative when nothing is.
  for (int i = 0; i < 200; ++i) {
    EXPECT_LE(http_policy::BackoffDelay(o, 20, std::chrono::milliseconds(7), rng).count(), 7);
    EXPECT_EQ(http_policy::BackoffDelay(o, 20, std::chrono::milliseconds(-5), rng).count(), 0);
  }
}

// ---- nginx -----------------------------------------------------------------------------------

// A suite over one `Server` (NginxServer, FaultServer) serving root_, which holds data_ as
// data.bin; every test skips or fails (SkipOrFailWithoutServer) when the server did not start.
template <class Server>
class ServedDataTest : public ::testing::Test {
 protected:
  // For the suite's SetUpTestSuite: data_ is `size` pseudo-random bytes from `seed`; `more`
  // writes further files into root_.
  static void Serve(size_t size, uint64_t seed,
                    const std::function<void(const TempDir&)>& more = nullptr) {
    root_ = std::make_unique<TempDir>();
    data_ = std::make_unique<std::string>(RandomBytes(size, seed));
    WriteFile(*root_ / "data.bin", *data_);
    if (more) more(*root_);
    std::string why;
    server_ = Server::Start(root_->path(), &why);
    if (server_ == nullptr) why_ = std::make_unique<std::string>(why);
  }
  static void TearDownTestSuite() {
    server_.reset();
    root_.reset();
    data_.reset();
    why_.reset();
  }
  void SetUp() override {
    if (server_ == nullptr) testing::SkipOrFailWithoutServer(*why_);
  }

  static inline std::unique_ptr<TempDir> root_;
  static inline std::unique_ptr<std::string> data_;
  static inline std::unique_ptr<Server> server_;
  static inline std::unique_ptr<std::string> why_;
};

class NginxTest : public ServedDataTest<NginxServer> {
 protected:
  static void SetUpTestSuite() {
    Serve(kDataSize, 42, [](const TempDir& root) {
      WriteFile(root / "concurrent.bin", *data_);
      WriteFile(root / "dir with space/é.bin", "hello");
    });
  }
  std::string Url(const std::string& name) { return server_->url() + "/" + name; }
};

TEST_F(NginxTest, HeadReportsSizeEtagAndRanges) {
  auto client = Client();
  auto info = client->Head(Url("data.bin"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, kDataSize);
  // nginx's ETag is "<mtime hex>-<size hex>".
  std::ostringstream size_hex;
  size_hex << std::hex << kDataSize;
  EXPECT_NE(info->etag.find("-" + size_hex.str() + "\""), std::string::npos) << info->etag;
  EXPECT_FALSE(info->last_modified.empty());
  EXPECT_TRUE(info->accepts_ranges);
}

TEST_F(NginxTest, RandomRangesMatchTheFile) {
  auto src = RemoteShardSource::Open(Client(), Url("data.bin"), "media/data.bin");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ASSERT_EQ((*src)->size(), kDataSize);
  std::mt19937_64 rng(7);
  std::vector<uint8_t> buf;
  for (int i = 0; i < 150; ++i) {
    uint64_t off = rng() % (kDataSize + 10);
    size_t len = 1 + rng() % 70000;
    if (i % 10 == 0) off = kDataSize - rng() % 100;  // straddles the end: a short read
    buf.assign(len, 0xEE);
    auto n = (*src)->ReadAt(off, buf);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    size_t expect = off >= kDataSize ? 0 : std::min<uint64_t>(len, kDataSize - off);
    ASSERT_EQ(*n, expect) << "offset " << off << " len " << len;
    if (expect > 0) {
      ASSERT_EQ(0, std::memcmp(buf.data(), data_->data() + off, expect)) << "offset " << off;
    }
  }
  // Offset exactly at the end and far past it: 0 bytes, no error.
  buf.assign(10, 0);
  EXPECT_EQ(*(*src)->ReadAt(kDataSize, buf), 0u);
  EXPECT_EQ(*(*src)->ReadAt(kDataSize * 2, buf), 0u);
  // The client itself asked past the end gets 416 and reports 0 bytes.
  auto raw = Client()->GetRange(Url("data.bin"), kDataSize, buf);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(*raw, 0u);
}

// The answer's ETag and size come back with the bytes; a GET that requires another ETag is
// refused by the server itself (If-Match: 412), so no bytes of another version arrive.
TEST_F(NginxTest, RangeAnswerCarriesEtagAndSizeAndIfMatchRefusesOtherVersions) {
  auto client = Client();
  auto info = client->Head(Url("data.bin"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  std::vector<uint8_t> buf(100);
  HttpRangeAnswer answer;
  auto n = client->GetRange(Url("data.bin"), 10, buf, {}, nullptr, &answer);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(answer.etag, info->etag);
  EXPECT_TRUE(answer.total_known);
  EXPECT_EQ(answer.total, kDataSize);
  EXPECT_TRUE(client->GetRange(Url("data.bin"), 10, buf, info->etag).ok());
  auto refused = client->GetRange(Url("data.bin"), 10, buf, "\"5f0-other\"");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kStale) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("412"), std::string::npos)
      << refused.status().ToString();
}

// A shard described by a catalog costs no request until read; its first GET checks the size.
TEST_F(NginxTest, CatalogDescribedSourceChecksTheSizeOnItsFirstGet) {
  auto pins = std::make_shared<EtagPins>();
  std::vector<uint8_t> buf(64);
  auto wrong = RemoteShardSource::FromCatalog(Client(), Url("data.bin"), "media/pack-0007.zip",
                                              kDataSize - 1, 0x1234, pins, 7);
  auto n = wrong->ReadAt(0, buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kStale) << n.status().ToString();
  EXPECT_NE(n.status().message().find("media/pack-0007.zip"), std::string::npos);
  EXPECT_NE(n.status().message().find("the catalog is stale"), std::string::npos);
  EXPECT_FALSE(pins->Get(7).has_value());  // nothing pinned from a refused answer
  auto right = RemoteShardSource::FromCatalog(Client(), Url("data.bin"), "media/pack-0007.zip",
                                              kDataSize, 0x1234, pins, 7);
  n = right->ReadAt(1000, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(0, std::memcmp(buf.data(), data_->data() + 1000, buf.size()));
  auto info = Client()->Head(Url("data.bin"));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(pins->Get(7), std::optional<std::string>(info->etag));
  // Another source of the same shard requires the pinned ETag: a pin nginx does not have fails.
  auto other = std::make_shared<EtagPins>();
  other->Pin(7, "\"5f0-other\"");
  auto pinned = RemoteShardSource::FromCatalog(Client(), Url("data.bin"), "media/pack-0007.zip",
                                               kDataSize, 0x1234, other, 7);
  n = pinned->ReadAt(0, buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kStale) << n.status().ToString();
}

// A conditional GET of an object's first bytes (how a mount asks for its catalog): the bytes
// and the object's size; all of a smaller object; nothing (304) for the ETag it still has.
TEST_F(NginxTest, ConditionalGetOfTheFirstBytes) {
  auto head = Client()->GetIfChanged(Url("data.bin"), 1 << 20, "", "", 4096);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_FALSE(head->not_modified);
  EXPECT_EQ(head->total, kDataSize);
  ASSERT_EQ(head->body.size(), 4096u);
  EXPECT_EQ(0, std::memcmp(head->body.data(), data_->data(), 4096));
  auto all = Client()->GetIfChanged(Url("data.bin"), 1 << 20, "", "", kDataSize + 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->total, kDataSize);
  EXPECT_EQ(all->body.size(), kDataSize);
  auto same = Client()->GetIfChanged(Url("data.bin"), 1 << 20, head->etag, "", 4096);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE(same->not_modified);
  EXPECT_TRUE(same->body.empty());
  auto other = Client()->GetIfChanged(Url("data.bin"), 1 << 20, "\"5f0-other\"", "", 4096);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_FALSE(other->not_modified);
  EXPECT_EQ(other->body.size(), 4096u);
}

TEST_F(NginxTest, OneMebibyteRead) {
  auto src = RemoteShardSource::Open(Client(), Url("data.bin"), "data.bin");
  ASSERT_TRUE(src.ok());
  std::vector<uint8_t> buf(1 << 20);
  auto n = (*src)->ReadAt(777, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), data_->data() + 777, buf.size()));
}

TEST_F(NginxTest, EncodedNamesReachTheFile) {
  auto base = ParseUrl(server_->url());
  auto url = JoinUrl(*base, "dir with space/é.bin");
  ASSERT_TRUE(url.ok());
  auto src = RemoteShardSource::Open(Client(), url->ToString(), "x");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::vector<uint8_t> buf(5);
  ASSERT_EQ(*(*src)->ReadAt(0, buf), 5u);
  EXPECT_EQ(buf, Bytes("hello"));
}

TEST_F(NginxTest, MissingObjectIsNotFoundNamingTheUrl) {
  auto src = RemoteShardSource::Open(Client(), Url("nope.zip"), "media/nope.zip");
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), Code::kNotFound);
  EXPECT_NE(src.status().message().find(Url("nope.zip")), std::string::npos);
  EXPECT_NE(src.status().message().find("404"), std::string::npos);
  EXPECT_NE(src.status().message().find("media/nope.zip"), std::string::npos);
  std::vector<uint8_t> buf(10);
  auto r = Client()->GetRange(Url("nope.zip"), 0, buf);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

TEST_F(NginxTest, ConcurrentReadersShareAFourConnectionPool) {
  HttpOptions o = FastRetries();
  o.max_connections = 4;
  auto client = Client(o);
  auto src = RemoteShardSource::Open(client, Url("concurrent.bin"), "concurrent.bin");
  ASSERT_TRUE(src.ok());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 10; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<uint8_t> buf;
      for (int i = 0; i < 40; ++i) {
        uint64_t off = rng() % kDataSize;
        buf.resize(1 + rng() % 100000);
        auto n = (*src)->ReadAt(off, buf);
        size_t expect = std::min<uint64_t>(buf.size(), kDataSize - off);
        if (!n.ok() || *n != expect || std::memcmp(buf.data(), data_->data() + off, expect) != 0) {
          ++bad;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  HttpClientStats st = client->stats();
  EXPECT_EQ(st.requests, 401u);
  EXPECT_LE(st.handles_created, 4u);
  EXPECT_LE(st.peak_in_use, 4u);
  // nginx's view: the 401 requests came over at most 4 TCP connections (reuse, bound). nginx
  // logs a request after sending its response, so the last lines may land a moment after the
  // client has them: wait for them (up to 10 s) rather than race.
  std::set<std::string> conns;
  int lines = 0;
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::istringstream log(server_->AccessLog());
    conns.clear();
    lines = 0;
    for (std::string line; std::getline(log, line);) {
      if (line.find("/concurrent.bin") == std::string::npos) continue;
      ++lines;
      conns.insert(line.substr(0, line.find(' ')));
    }
    if (lines >= 401) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(lines, 401);
  EXPECT_GE(conns.size(), 1u);
  EXPECT_LE(conns.size(), 4u);
}

TEST_F(NginxTest, RemoteStoreMapsShardNamesToUrls) {
  auto store = RemoteStore::Create(server_->url() + "/", S3Config{}, FastRetries());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->s3(), nullptr);
  auto src = (*store)->Open("dir with space/é.bin");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ((*src)->name(), "dir with space/é.bin");
  EXPECT_EQ((*src)->url(), server_->url() + "/dir%20with%20space/%C3%A9.bin");
  auto small = (*store)->Fetch("dir with space/é.bin", 100);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(*small, "hello");
  auto big = (*store)->Fetch("data.bin", 1000);
  EXPECT_EQ(big.status().code(), Code::kInvalidArgument) << big.status().ToString();
  EXPECT_EQ((*store)->Open("../etc/passwd").status().code(), Code::kInvalidArgument);
  EXPECT_EQ((*store)->Open("missing.zip").status().code(), Code::kNotFound);
  EXPECT_FALSE(RemoteStore::Create("ftp://x/y", S3Config{}, FastRetries()).ok());
}

// ---- fault server ------------------------------------------------------------------------------

class FaultTest : public ServedDataTest<FaultServer> {
 protected:
  static void SetUpTestSuite() { Serve(300000, 9); }
  std::string Url(const std::string& path) { return server_->url() + path; }
  // How many requests the server saw for `path`.
  int Count(const std::string& path) {
    auto body = Client()->GetAll(Url("/_count" + path), 100);
    EXPECT_TRUE(body.ok()) << body.status().ToString();
    return body.ok() ? std::stoi(*body) : -1;
  }
};

TEST_F(FaultTest, RetriesThrough503s) {
  auto client = Client();
  std::vector<uint8_t> buf(50000);
  auto n = client->GetRange(Url("/fail503/3/data.bin"), 1000, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), data_->data() + 1000, buf.size()));
  EXPECT_EQ(client->stats().retries, 3u);
  EXPECT_EQ(Count("/fail503/3/data.bin"), 4);
}

TEST_F(FaultTest, GivesUpAfterMaxAttemptsNamingUrlAndStatus) {
  HttpOptions o = FastRetries();
  o.max_attempts = 2;
  std::vector<uint8_t> buf(10);
  auto n = Client(o)->GetRange(Url("/fail503/5/data.bin"), 0, buf);
  ASSERT_FALSE(n.ok());
  const std::string& m = n.status().message();
  EXPECT_NE(m.find(Url("/fail503/5/data.bin")), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 503"), std::string::npos) << m;
  EXPECT_NE(m.find("2 attempts"), std::string::npos) << m;
  EXPECT_EQ(Count("/fail503/5/data.bin"), 2);
}

TEST_F(FaultTest, RetriesADroppedBody) {
  auto client = Client();
  auto src = RemoteShardSource::Open(client, Url("/drop/2/data.bin"), "data.bin");
  ASSERT_TRUE(src.ok()) << src.status().ToString();  // HEAD is not dropped (no body)
  std::vector<uint8_t> buf(200000);
  auto n = (*src)->ReadAt(5000, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), data_->data() + 5000, buf.size()));
  EXPECT_EQ(client->stats().retries, 1u);  // the HEAD used up one of the two drops
}

// Progress reports only final bytes: they grow, and when the body breaks off the retry asks
// for the rest only, so bytes already reported are never written again.
TEST_F(FaultTest, ProgressGrowsAndADroppedBodyResumesWhereItBroke) {
  auto client = Client();
  std::vector<uint8_t> buf(200000);
  std::vector<size_t> seen;
  auto n = client->GetRange(Url("/drop/1/data.bin"), 5000, buf, {},
                            [&](size_t ready) { seen.push_back(ready); });
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), data_->data() + 5000, buf.size()));
  EXPECT_EQ(client->stats().retries, 1u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), buf.size());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i], seen[i - 1]) << i;
  // The first attempt (cut at half) reported its bytes before it broke.
  EXPECT_LE(seen.front(), buf.size() / 2);
}

TEST_F(FaultTest, ProgressIsNeverReportedForAnotherVersionOfTheObject) {
  std::vector<uint8_t> buf(1000);
  size_t calls = 0;
  auto n = Client()->GetRange(Url("/data.bin"), 0, buf, "\"not-the-etag\"",
                              [&](size_t) { ++calls; });
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kStale) << n.status().ToString();
  EXPECT_EQ(calls, 0u);
}

TEST_F(FaultTest, ServerIgnoringRangeIsRefused) {
  auto src = RemoteShardSource::Open(Client(), Url("/norange/data.bin"), "media/pack-0000.zip");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::vector<uint8_t> buf(100);
  auto n = (*src)->ReadAt(10, buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kNotSupported);
  const std::string& m = n.status().message();
  EXPECT_NE(m.find("ignores Range"), std::string::npos) << m;
  EXPECT_NE(m.find(Url("/norange/data.bin")), std::string::npos) << m;
  EXPECT_NE(m.find("media/pack-0000.zip"), std::string::npos) << m;
}

TEST_F(FaultTest, SlowServerTimesOut) {
  HttpOptions o = FastRetries();
  o.request_timeout = std::chrono::milliseconds(300);
  std::vector<uint8_t> buf(100);
  auto n = Client(o)->GetRange(Url("/delay/5000/data.bin"), 0, buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().err(), ETIMEDOUT) << n.status().ToString();
  EXPECT_NE(n.status().message().find("timed out"), std::string::npos);
  EXPECT_NE(n.status().message().find("/delay/5000/data.bin"), std::string::npos);
}

TEST_F(FaultTest, DelayWithinTheDeadlineSucceeds) {
  std::vector<uint8_t> buf(100);
  auto n = Client()->GetRange(Url("/delay/100/data.bin"), 0, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(0, std::memcmp(buf.data(), data_->data(), 100));
}

TEST_F(FaultTest, ConnectionRefusedIsAnErrorNamingTheUrl) {
  int port = testing::FreeLoopbackPort();
  HttpOptions o = FastRetries();
  o.max_attempts = 2;
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  auto r = Client(o)->Head(url);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIOError);
  EXPECT_NE(r.status().message().find(url), std::string::npos) << r.status().message();
}

TEST_F(FaultTest, ChangedObjectIsStale) {
  // The source believes an ETag the server no longer has.
  auto src = RemoteShardSource::FromKnown(Client(), Url("/data.bin"), "data.bin", data_->size(),
                                          "\"not-the-etag\"");
  std::vector<uint8_t> buf(10);
  auto n = src->ReadAt(0, buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kStale) << n.status().ToString();
}

}  // namespace
}  // namespace packfs
