// mkpack ls / verify / resolve / catalog on remote pack sets, as real processes against nginx
// (http) and moto_server (s3) on loopback: output equal to the local commands', a damaged shard
// named by URL and member, resolve's offsets read back with a ranged GET, a catalog built over
// ranged reads (written to a file for http, uploaded with a signed PUT for s3 and then used), and
// the conditional catalog fetch (a 304 in nginx's log for an unchanged catalog, a changed one
// downloaded and used).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

#include "tests/support/http_servers.h"
#include "tests/support/remote_fixture.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;

using testing::RunResult;
using testing::TempDir;

RunResult Mkpack(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::MkpackPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Run(argv);
}

std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

// HTTP statuses nginx logged for requests whose URI contains `uri_part`, in order.
std::vector<std::string> Statuses(const testing::NginxServer& server, const std::string& uri_part) {
  std::vector<std::string> out;
  for (const std::string& line : Split(server.AccessLog(), '\n')) {
    const auto f = Split(line, ' ');  // "<connection> <status> <uri>"
    if (f.size() == 3 && f[2].find(uri_part) != std::string::npos) out.push_back(f[1]);
  }
  return out;
}

// nginx logs a request after answering it; give the last line a moment to land.
std::vector<std::string> StatusesAfter(const testing::NginxServer& server,
                                       const std::string& uri_part, size_t at_least) {
  std::vector<std::string> s;
  for (int i = 0; i < 100; ++i) {
    s = Statuses(server, uri_part);
    if (s.size() >= at_least) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return s;
}

constexpr const char* kMaxPackBytes = "128K";  // several shards

// Writes a small tree under `src`.
void WriteTree(const std::string& src, uint64_t seed, int files) {
  for (int i = 0; i < files; ++i) {
    const size_t size = (static_cast<size_t>(i) * 7919 + 13) % 50000;
    testing::WriteFile(src + "/d" + std::to_string(i % 3) + "/f" + std::to_string(i) + ".bin",
                       testing::RandomBytes(size, seed + static_cast<uint64_t>(i)));
  }
  testing::WriteFile(src + "/big/a.bin", testing::RandomBytes(400000, seed + 1000));
}

// Writes a small tree and packs it into `out`.
void WriteAndPackTree(const std::string& src, const std::string& out, uint64_t seed, int files) {
  WriteTree(src, seed, files);
  fs::create_directories(fs::path(out).parent_path());
  RunResult r = testing::PackTree(src, out, kMaxPackBytes);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

class MkpackRemoteTest : public testing::ServedSetTest {
 protected:
  static void SetUpTestSuite() {
    ServeSet([](const TempDir& t) { WriteTree(t / "src", 1, 30); }, kMaxPackBytes);
    if (broken_ != nullptr) return;
    const TempDir& t = *tmp_;
    testing::Sh("mkdir -p '" + (t / "www/nocat/media") + "' '" + (t / "www/bad/media") +
                "' && cp '" + (t / "www/media") + "'/pack-*.zip '" + (t / "www/nocat/media") +
                "'/ && cp -r '" + (t / "www/media") + "'/. '" + (t / "www/bad/media") + "'/");
  }
  void SetUp() override {
    ServedSetTest::SetUp();
    testing::ClearAwsEnvironment();
  }
  std::string Local() const { return *tmp_ / "www/media"; }
  std::string Url(const std::string& path) const { return server_->url() + "/" + path; }
  std::string Cache() const { return cache_ / "cache"; }

  TempDir cache_;
};

TEST_F(MkpackRemoteTest, HttpLsEqualsLocalLs) {
  for (const char* flag : {"--long", "--json", "--refs"}) {
    SCOPED_TRACE(flag);
    RunResult local = Mkpack({"ls", flag, Local()});
    ASSERT_EQ(local.exit_code, 0) << local.err;
    RunResult remote = Mkpack({"ls", flag, Url("media"), "--cache-dir", Cache()});
    ASSERT_EQ(remote.exit_code, 0) << remote.err;
    EXPECT_EQ(remote.out, local.out);
    EXPECT_GT(Split(local.out, '\n').size(), 30u);
  }
}

TEST_F(MkpackRemoteTest, HttpVerifyPassesOnAnIntactSet) {
  RunResult r = Mkpack({"verify", Url("media"), "--cache-dir", Cache(), "-j", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("OK: 31 members"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("catalog consistent"), std::string::npos) << r.out;
}

TEST_F(MkpackRemoteTest, HttpVerifyNamesTheUrlAndMemberOfADamagedShard) {
  // Flip one data byte of big/a.bin in the served copy (nginx's ETag changes with it, which is
  // why verify reports a CRC mismatch rather than "the object changed": it takes the ETag it
  // finds when it starts).
  RunResult where = Mkpack({"resolve", *tmp_ / "www/bad/media", "big/a.bin"});
  ASSERT_EQ(where.exit_code, 0) << where.err;
  const auto f = Split(Split(where.out, '\n')[0], '\t');
  ASSERT_EQ(f.size(), 4u);
  const std::string shard = fs::path(f[0]).filename();
  const uint64_t at = std::stoull(f[1]) + 1234;
  testing::Sh("printf '\\xff' | dd of='" + f[0] + "' bs=1 seek=" + std::to_string(at) +
              " conv=notrunc status=none");
  RunResult r = Mkpack({"verify", Url("bad/media"), "--cache-dir", Cache()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string expect = Url("bad/media/" + shard) + ": member big/a.bin: CRC-32";
  EXPECT_NE(r.out.find(expect), std::string::npos) << r.out;
  // Nothing else is reported.
  EXPECT_NE(r.out.find("FAILED: 1 problems"), std::string::npos) << r.out;
}

TEST_F(MkpackRemoteTest, HttpVerifyOfAMissingSetNamesTheUrl) {
  RunResult r = Mkpack({"verify", Url("nothing/media"), "--cache-dir", Cache()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(Url("nothing/media")), std::string::npos) << r.err;
}

// `python3 -m http.server` answers ranged GETs with the whole file: verify says so in one line
// (exit 2) instead of a problem for every shard and catalog entry; catalog refuses the same way.
TEST_F(MkpackRemoteTest, ServerWithoutRangesIsOneClearLine) {
  std::string why;
  auto plain = testing::PythonHttpServer::Start(*tmp_ / "www", &why);
  if (plain == nullptr) GTEST_SKIP() << why;
  const std::string url = plain->url() + "/media";
  RunResult r = Mkpack({"verify", url, "--cache-dir", Cache()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Split(r.err, '\n').size(), 1u) << r.err;
  EXPECT_NE(r.err.find("ignores HTTP Range requests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(url + "/pack-0000.zip"), std::string::npos) << r.err;
  r = Mkpack({"catalog", url, "-o", cache_ / "cat.sqlite", "--cache-dir", Cache()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("ignores HTTP Range requests"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(cache_ / "cat.sqlite"));
}

TEST_F(MkpackRemoteTest, HttpResolveMatchesLocalAndTheBytesAreThere) {
  RunResult refs = Mkpack({"ls", "--refs", Local()});
  ASSERT_EQ(refs.exit_code, 0);
  std::vector<std::string> keys, zrefs;
  for (const std::string& line : Split(refs.out, '\n')) {
    const auto kv = Split(line, '\t');
    if (kv.size() == 2 && (keys.size() < 4 || kv[0] == "big/a.bin")) {
      keys.push_back(kv[0]);
      zrefs.push_back(kv[1]);
    }
  }
  ASSERT_GE(keys.size(), 4u);
  std::vector<std::string> local_args = {"resolve", Local()};
  local_args.insert(local_args.end(), zrefs.begin(), zrefs.end());
  RunResult local = Mkpack(local_args);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  std::vector<std::string> remote_args = {"resolve", Url("media"), "--cache-dir", Cache()};
  remote_args.insert(remote_args.end(), zrefs.begin(), zrefs.end());
  RunResult remote = Mkpack(remote_args);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  // Against the dataset root, every argument a reference.
  std::vector<std::string> root_args = {"resolve", "--root", server_->url(), "--cache-dir",
                                        Cache()};
  root_args.insert(root_args.end(), zrefs.begin(), zrefs.end());
  RunResult rooted = Mkpack(root_args);
  ASSERT_EQ(rooted.exit_code, 0) << rooted.err;
  EXPECT_EQ(rooted.out, remote.out);

  const auto l = Split(local.out, '\n'), r = Split(remote.out, '\n');
  ASSERT_EQ(l.size(), keys.size());
  ASSERT_EQ(r.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE(keys[i]);
    const auto lf = Split(l[i], '\t'), rf = Split(r[i], '\t');
    ASSERT_EQ(rf.size(), 4u);
    // Same offset, size and CRC; the path is the shard's URL.
    EXPECT_EQ(rf[0], Url("media/" + fs::path(lf[0]).filename().string()));
    EXPECT_EQ(std::vector<std::string>(rf.begin() + 1, rf.end()),
              std::vector<std::string>(lf.begin() + 1, lf.end()));
    // A loader's ranged GET at that place returns the member's bytes.
    const uint64_t off = std::stoull(rf[1]), size = std::stoull(rf[2]);
    if (size == 0) continue;
    RunResult got = testing::Run({"curl", "-sf", "-r",
                         std::to_string(off) + "-" + std::to_string(off + size - 1), rf[0]});
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_TRUE(got.out == testing::ReadFile(*tmp_ / ("src/" + keys[i])));
  }
}

TEST_F(MkpackRemoteTest, ResolveRootRefusesReferencesThatLeaveIt) {
  RunResult r = Mkpack({"resolve", "--root", server_->url(), "--cache-dir", Cache(),
                        "zip://a::../media/pack-0000.zip"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inside the root"), std::string::npos) << r.err;
}

TEST_F(MkpackRemoteTest, HttpCatalogIsWrittenToAFileThatThenServes) {
  // Without a catalog the set cannot be opened over http.
  RunResult before = Mkpack({"ls", Url("nocat/media"), "--cache-dir", Cache()});
  EXPECT_EQ(before.exit_code, 2);
  const std::string out = cache_ / "built.sqlite";
  RunResult r = Mkpack({"catalog", Url("nocat/media"), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("wrote " + out + "; publish it beside the shards as " +
                       Url("nocat/media/.packfs-catalog.sqlite")),
            std::string::npos)
      << r.out;
  fs::copy_file(out, *tmp_ / "www/nocat/media/.packfs-catalog.sqlite",
                fs::copy_options::overwrite_existing);
  RunResult local = Mkpack({"ls", "--long", Local()});
  RunResult remote = Mkpack({"ls", "--long", Url("nocat/media"), "--cache-dir", Cache()});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(remote.out, local.out);
  RunResult verify = Mkpack({"verify", Url("nocat/media"), "--cache-dir", Cache()});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("catalog consistent"), std::string::npos) << verify.out;
  fs::remove(*tmp_ / "www/nocat/media/.packfs-catalog.sqlite");
}

TEST_F(MkpackRemoteTest, HttpCatalogWithoutOutputIsRefusedBeforeWritingAnything) {
  // No default file: the catalog would land in whatever directory mkpack runs in.
  const std::string dir = *tmp_ / "cwd";
  fs::create_directories(dir);
  RunResult r = testing::Sh("cd '" + dir + "' && '" + testing::MkpackPath() + "' catalog '" +
                            Url("nocat/media") + "' 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("needs -o FILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(Url("nocat/media/.packfs-catalog.sqlite")), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST_F(MkpackRemoteTest, CatalogCheckOfAUrlPointsToVerify) {
  RunResult r = Mkpack({"catalog", "--check", Url("media")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mkpack verify"), std::string::npos) << r.err;
}

TEST_F(MkpackRemoteTest, UnchangedCatalogCostsA304AndAChangedOneIsUsed) {
  const TempDir& t = *tmp_;
  WriteAndPackTree(t / "srcA", t / "www/cond/media", 100, 5);
  const std::string uri = "/cond/media/.packfs-catalog.sqlite";
  RunResult first = Mkpack({"ls", Url("cond/media"), "--cache-dir", Cache()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunResult second = Mkpack({"ls", Url("cond/media"), "--cache-dir", Cache()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, first.out);
  // The one request asks for the catalog's first MiB (a 206 holding all of this small one), with
  // the cached copy's validators once there is one.
  EXPECT_EQ(StatusesAfter(*server_, uri, 2), (std::vector<std::string>{"206", "304"}));

  // Another set with other keys replaces it on the server (catalog last, with a later mtime:
  // nginx's ETag is mtime and size).
  WriteAndPackTree(t / "srcB", t / "newB", 200, 7);
  testing::Sh("cd '" + (t / "newB") + "' && cp pack-*.zip '" + (t / "www/cond/media") +
              "'/ && touch -d '2030-01-01' .packfs-catalog.sqlite && "
              "cp -p .packfs-catalog.sqlite '" +
              (t / "www/cond/media") + "/.cat.tmp' && mv '" + (t / "www/cond/media") +
              "/.cat.tmp' '" + (t / "www/cond/media") + "/.packfs-catalog.sqlite'");
  RunResult third = Mkpack({"ls", Url("cond/media"), "--cache-dir", Cache()});
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(third.out, Mkpack({"ls", t / "newB"}).out);
  EXPECT_NE(third.out, first.out);
  EXPECT_EQ(StatusesAfter(*server_, uri, 3), (std::vector<std::string>{"206", "304", "206"}));

  // A cached copy that no longer matches its sidecar is downloaded again, not trusted.
  for (const auto& e : fs::directory_iterator(Cache())) {
    if (e.path().extension() == ".sqlite") {
      testing::Sh("printf x >> '" + e.path().string() + "'");
    }
  }
  RunResult fourth = Mkpack({"ls", Url("cond/media"), "--cache-dir", Cache()});
  ASSERT_EQ(fourth.exit_code, 0) << fourth.err;
  EXPECT_EQ(fourth.out, third.out);
  EXPECT_EQ(StatusesAfter(*server_, uri, 4),
            (std::vector<std::string>{"206", "304", "206", "206"}));
}

// S3 through moto: a set at the bucket root (moto's signature check mis-encodes "/" in a listing
// prefix, so signed listings work only without one), catalog built and uploaded with a signed
// PUT, then used by ls and verify.
class MkpackS3Test : public testing::WithSignedS3<MkpackRemoteTest> {
 protected:
  static void SetUpTestSuite() {
    MkpackRemoteTest::SetUpTestSuite();
    StartMoto(
        "import glob, os\n"
        "s3.create_bucket(Bucket='packfs-root')\n"
        "for p in sorted(glob.glob('" + (*tmp_ / "www/media") + "/pack-*.zip')):\n"
        "    s3.put_object(Bucket='packfs-root', Key=os.path.basename(p),\n"
        "                  Body=open(p, 'rb').read(), ACL='public-read')\n");
  }
  std::vector<std::string> S3Args() const {
    return {"--endpoint", moto_->endpoint(), "--cache-dir", Cache()};
  }
};

TEST_F(MkpackS3Test, CatalogIsUploadedWithASignedPutAndThenUsed) {
  // A wrong secret fails the signed requests, naming the status.
  SignIn("not-the-secret");
  std::vector<std::string> args = {"catalog", "s3://packfs-root"};
  auto s3 = S3Args();
  args.insert(args.end(), s3.begin(), s3.end());
  RunResult denied = Mkpack(args);
  EXPECT_EQ(denied.exit_code, 2) << denied.out;
  EXPECT_NE(denied.err.find("HTTP 403"), std::string::npos) << denied.err;

  SignIn(user_->secret);
  RunResult r = Mkpack(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("uploaded " + moto_->endpoint() + "/packfs-root/.packfs-catalog.sqlite"),
            std::string::npos)
      << r.out;
  // The object is there (looked at with moto's own client, which signs as a dummy user), and it
  // is the catalog of these shards.
  moto_->SetAuth(false);
  const std::string size = moto_->Python(
      "print(s3.head_object(Bucket='packfs-root', Key='.packfs-catalog.sqlite')['ContentLength'])");
  EXPECT_GT(std::stoull(size), 4096u);
  SignIn(user_->secret);
  std::vector<std::string> ls = {"ls", "--long", "s3://packfs-root"};
  ls.insert(ls.end(), s3.begin(), s3.end());
  RunResult remote = Mkpack(ls);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(remote.out, Mkpack({"ls", "--long", Local()}).out);
  // Opening with a catalog fetched it into the cache (no listing and indexing at open).
  bool cached = false;
  for (const auto& e : fs::directory_iterator(Cache())) {
    cached |= e.path().filename().string().rfind("packfs-root-", 0) == 0;
  }
  EXPECT_TRUE(cached);
  std::vector<std::string> verify = {"verify", "s3://packfs-root"};
  verify.insert(verify.end(), s3.begin(), s3.end());
  RunResult v = Mkpack(verify);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("catalog consistent"), std::string::npos) << v.out;
}

TEST_F(MkpackS3Test, AnonymousCatalogIsWrittenLocallyNotUploaded) {
  moto_->SetAuth(false);
  const std::string out = cache_ / "anon.sqlite";
  std::vector<std::string> args = {"catalog", "s3://packfs-root", "--anonymous", "-o", out};
  auto s3 = S3Args();
  args.insert(args.end(), s3.begin(), s3.end());
  RunResult r = Mkpack(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_NE(r.out.find("publish it beside the shards as"), std::string::npos) << r.out;
}

TEST_F(MkpackS3Test, S3CatalogWithoutCredentialsOrOutputSaysWhy) {
  // The scheme in any case is S3 (as the set was read): the refusal names the missing
  // credentials, not an HTTP server.
  moto_->SetAuth(false);
  for (const std::string url : {"s3://packfs-root", "S3://packfs-root"}) {
    std::vector<std::string> args = {"catalog", url, "--anonymous"};
    auto s3 = S3Args();
    args.insert(args.end(), s3.begin(), s3.end());
    RunResult r = Mkpack(args);
    EXPECT_EQ(r.exit_code, 2) << url << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("no S3 credentials to upload it with"), std::string::npos)
        << url << ": " << r.err;
  }
}

}  // namespace
}  // namespace packfs
