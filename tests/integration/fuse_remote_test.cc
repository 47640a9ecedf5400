// Real packfs mounts of remote pack sets: nginx serving a pack set `mkpack pack` wrote (bytes of
// every file, blob references, ffprobe on an MP4 member, one ranged GET per small file's first
// read counted in nginx's access log), an http set without a catalog (refused with advice),
// moto S3 with signed requests (with a catalog) and unsigned (listed and indexed at mount), a
// stale catalog and shards replaced on the server under a live mount (EIO on their members only,
// found by the shard's first GET or by If-Match; the daemon keeps serving); a small file's
// neighbour comes with its block (no GET of its own; one with -o exact_gets); with -o nowalk a
// directory read through after a listing is not walked (no GET for a file nobody asked for).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/remote/remote_pack_set.h"
#include "tests/support/http_servers.h"
#include "tests/support/mount_util.h"
#include "tests/support/remote_fixture.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::Mount;
using testing::TempDir;

constexpr size_t kSmallSize = 20 * 1024;

class RemoteMountTest : public testing::ServedSetMountTest {
 protected:
  static void SetUpTestSuite() {
    ServeSet(WriteTree, "256K");
    if (broken_ != nullptr) return;
    // The same shards without a catalog.
    testing::Sh("mkdir -p '" + (*tmp_ / "www/nocat/media") + "' && cp '" + (*tmp_ / "www/media") +
                "'/pack-*.zip '" + (*tmp_ / "www/nocat/media") + "'/");
  }
  // Small files of many sizes (one exactly kSmallSize), nested directories, two large files, and
  // an MP4 when ffmpeg is here.
  static void WriteTree(const TempDir& t) {
    for (int i = 0; i < 40; ++i) {
      const size_t size = (static_cast<size_t>(i) * 7919) % 60000;
      testing::WriteFile(t / ("src/small/d" + std::to_string(i % 4) + "/f" + std::to_string(i)),
                         testing::RandomBytes(size, static_cast<uint64_t>(i) + 1));
    }
    testing::WriteFile(t / "src/small/exact20k.bin", testing::RandomBytes(kSmallSize, 99));
    testing::WriteFile(t / "src/big/a.bin", testing::RandomBytes(1500000, 100));
    testing::WriteFile(t / "src/big/b.bin", testing::RandomBytes(700001, 101));
    if (testing::HasCommand("ffmpeg")) {
      ::mkdir((t / "src/video").c_str(), 0755);
      auto r = testing::Run({"ffmpeg", "-v", "error", "-f", "lavfi", "-i",
                             "testsrc2=size=160x120:rate=10", "-t", "1", "-pix_fmt", "yuv420p",
                             t / "src/video/clip.mp4"});
      (void)r;  // without it the ffprobe check skips
    }
  }
};

TEST_F(RemoteMountTest, HttpMountServesEveryFileByteForByte) {
  Mount m({server_->url() + "/media"}, Mnt(), CacheArgs());
  ASSERT_TRUE(m.ok()) << m.result().err;
  ASSERT_NO_FATAL_FAILURE(testing::ExpectSameFiles(*tmp_ / "src", Mnt()));
  // References name the shard by the URL's last segment; the shard xattr is its URL.
  const std::string ref = testing::XattrText(Mnt() + "/big/a.bin", "user.packfs.ref");
  EXPECT_EQ(ref.rfind("zip://big/a.bin::media/pack-", 0), 0u) << ref;
  const std::string shard = testing::XattrText(Mnt() + "/big/a.bin", "user.packfs.shard");
  EXPECT_EQ(shard.rfind(server_->url() + "/media/pack-", 0), 0u) << shard;
  // The catalog was cached under --cache-dir.
  bool cached = false;
  for (const auto& e : fs::directory_iterator(mnt_dir_ / "cache")) {
    cached |= e.path().filename().string().rfind("media-", 0) == 0;
  }
  EXPECT_TRUE(cached);
}

// --cache-dir and --disk-cache relative to where packfs ran: the daemon leaves that directory,
// so they must be made absolute before it does.
TEST_F(RemoteMountTest, RelativeCacheDirectories) {
  auto r = testing::Sh("cd '" + mnt_dir_.path() + "' && '" + testing::PackfsPath() +
                       "' --cache-dir cache --disk-cache dcache '" + server_->url() +
                       "/media' mnt </dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(testing::IsMounted(Mnt()));
  std::string bytes;
  EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/small/exact20k.bin", &bytes), 0);
  EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / "src/small/exact20k.bin"));
  EXPECT_EQ(testing::Run({"fusermount3", "-u", Mnt()}).exit_code, 0);
  ASSERT_TRUE(testing::WaitMounted(Mnt(), false));
  size_t catalogs = 0, cached = 0;
  for (const auto& e : fs::directory_iterator(mnt_dir_ / "cache")) {
    catalogs += e.path().filename().string().rfind("media-", 0) == 0;
  }
  for (const auto& e : fs::recursive_directory_iterator(mnt_dir_ / "dcache")) {
    cached += e.is_regular_file();
  }
  EXPECT_EQ(catalogs, 2u);  // the catalog and its sidecar
  EXPECT_GT(cached, 0u);
  EXPECT_FALSE(fs::exists("/cache") || fs::exists("/dcache"));
}

TEST_F(RemoteMountTest, FfprobeReadsAnMp4Member) {
  if (!fs::exists(*tmp_ / "src/video/clip.mp4") || !testing::HasCommand("ffprobe")) {
    GTEST_SKIP() << "no ffmpeg/ffprobe";
  }
  Mount m({server_->url() + "/media"}, Mnt(), CacheArgs());
  ASSERT_TRUE(m.ok()) << m.result().err;
  auto r = testing::Run({"ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                         "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                         Mnt() + "/video/clip.mp4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "10\n");
}

TEST_F(RemoteMountTest, SmallFileFirstReadIsOneRangedGet) {
  Mount m({server_->url() + "/media"}, Mnt(), CacheArgs());
  ASSERT_TRUE(m.ok()) << m.result().err;
  const std::string path = Mnt() + "/small/exact20k.bin";
  const std::string shard_url = testing::XattrText(path, "user.packfs.shard");
  ASSERT_FALSE(shard_url.empty());
  const std::string uri = shard_url.substr(server_->url().size());  // "/media/pack-000N.zip"
  const size_t before = server_->SettledRequests(uri);
  std::string bytes;
  ASSERT_EQ(testing::ReadWithErrno(path, &bytes), 0);
  EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / "src/small/exact20k.bin"));
  EXPECT_EQ(server_->SettledRequests(uri), before + 1) << server_->AccessLog();
  // A second read comes from the page cache (or at worst one more GET), never a header read.
  ASSERT_EQ(testing::ReadWithErrno(path, &bytes), 0);
  EXPECT_LE(server_->SettledRequests(uri), before + 2);
}

// The files of each shard of the mount, by shard reference ("media/pack-0001.zip").
std::map<std::string, std::vector<std::string>> FilesByShard(const std::string& mnt,
                                                             const std::string& src) {
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [key, bytes] : testing::TreeFiles(src)) {
    const std::string ref = testing::XattrText(mnt + "/" + key, "user.packfs.ref");
    by_shard[ref.substr(ref.rfind("::") + 2)].push_back(key);
  }
  return by_shard;
}

// A small file read at random is fetched with the rest of its 512 KiB unit (RemoteReader): a
// file of the same directory read next costs no GET; with -o exact_gets it costs its own.
// (-o nowalk: two files of ten make the directory ready, and its walk would fetch the rest.)
TEST_F(RemoteMountTest, ASmallFilesNeighbourComesWithItsBlock) {
  for (const bool exact : {false, true}) {
    SCOPED_TRACE(exact ? "-o exact_gets" : "by the block");
    std::vector<std::string> args = CacheArgs();
    args.insert(args.end(), {"-o", exact ? "nowalk,exact_gets" : "nowalk"});
    Mount m({server_->url() + "/media"}, Mnt(), args);
    ASSERT_TRUE(m.ok()) << m.result().err;
    // Two files with bytes of small/d1 in one shard, the later one first (not a walk).
    std::string shard;
    std::vector<std::string> keys;
    for (const auto& [in, all] : FilesByShard(Mnt(), *tmp_ / "src")) {
      keys.clear();
      for (const auto& key : all) {
        if (key.starts_with("small/d1/") && fs::file_size(*tmp_ / ("src/" + key)) > 0) {
          keys.push_back(key);
        }
      }
      shard = in;
      if (keys.size() >= 2) break;
    }
    ASSERT_GE(keys.size(), 2u);
    std::sort(keys.rbegin(), keys.rend());
    const std::string uri = "/" + shard;  // "/media/pack-000N.zip"
    const size_t before = server_->SettledRequests(uri);
    for (size_t i = 0; i < 2; ++i) {
      std::string bytes;
      ASSERT_EQ(testing::ReadWithErrno(Mnt() + "/" + keys[i], &bytes), 0);
      EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / ("src/" + keys[i]))) << keys[i];
    }
    EXPECT_EQ(server_->SettledRequests(uri), before + (exact ? 2 : 1)) << server_->AccessLog();
  }
}

// With -o nowalk, a directory read through after a listing is not walked on a remote set
// (fuse/push.h): its files are not pushed, so no GET is sent for a file nobody asked for.
// (Without it the walk fetches the rest of the directory: fuse_remote_push_test.)
TEST_F(RemoteMountTest, WithNowalkADirectoryReadThroughIsNotFetchedAhead) {
  std::vector<std::string> args = CacheArgs();
  args.insert(args.end(), {"-o", "nowalk"});
  Mount m({server_->url() + "/media"}, Mnt(), args);
  ASSERT_TRUE(m.ok()) << m.result().err;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(Mnt() + "/small/d1")) {
    names.push_back(e.path().filename().string());
  }
  ASSERT_EQ(names.size(), 10u);
  std::sort(names.begin(), names.end());
  const std::string shard_url =
      testing::XattrText(Mnt() + "/small/d1/" + names[0], "user.packfs.shard");
  ASSERT_FALSE(shard_url.empty());
  const std::string uri = shard_url.substr(server_->url().size());
  const size_t before = server_->SettledRequests(uri);
  for (int i = 7; i < 10; ++i) {  // 30% of d1, past the push rule's 15%
    std::string bytes;
    ASSERT_EQ(testing::ReadWithErrno(Mnt() + "/small/d1/" + names[i], &bytes), 0);
    EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / ("src/small/d1/" + names[i]))) << names[i];
  }
  const size_t after = server_->SettledRequests(uri);
  EXPECT_LE(after, before + 3) << server_->AccessLog();
  const nlohmann::json push = testing::MountStats(Mnt())["push"];
  EXPECT_EQ(push["walked_dirs"].get<int>(), 0) << push;
  EXPECT_EQ(push["files"].get<int>(), 0) << push;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server_->SettledRequests(uri), after) << "GETs sent after the reads";
}

TEST_F(RemoteMountTest, HttpWithoutCatalogIsRefusedWithAdvice) {
  Mount m({server_->url() + "/nocat/media"}, Mnt(), CacheArgs());
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.result().exit_code, 0);
  EXPECT_NE(m.result().err.find(".packfs-catalog.sqlite"), std::string::npos) << m.result().err;
  EXPECT_NE(m.result().err.find("mkpack catalog"), std::string::npos) << m.result().err;
}

// `python3 -m http.server` answers a ranged GET with the whole file: every read would fail, so
// the mount is refused, with the reason on stderr and nothing left mounted.
TEST_F(RemoteMountTest, ServerWithoutRangesIsRefusedAtMount) {
  std::string why;
  auto plain = testing::PythonHttpServer::Start(*tmp_ / "www", &why);
  if (plain == nullptr) GTEST_SKIP() << why;
  Mount m({plain->url() + "/media"}, Mnt(), CacheArgs());
  EXPECT_NE(m.result().exit_code, 0);
  EXPECT_FALSE(testing::IsMounted(Mnt()));
  const std::string& err = m.result().err;
  EXPECT_NE(err.find("ignores HTTP Range requests"), std::string::npos) << err;
  EXPECT_NE(err.find(plain->url() + "/media/pack-0000.zip"), std::string::npos) << err;
}

// A member whose bytes were damaged on the server (size, mtime and so ETag kept) fails its
// CRC-32 check: EIO, named in user.packfs.errors; its neighbours still read.
TEST_F(RemoteMountTest, DamagedMemberOnTheServerIsEio) {
  const std::string dir = *tmp_ / "www/crc/media";
  auto cp = testing::Sh("mkdir -p '" + dir + "' && cp -p '" + (*tmp_ / "www/media") +
                        "'/pack-*.zip '" + (*tmp_ / "www/media/.packfs-catalog.sqlite") + "' '" +
                        dir + "'/");
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  // A small member (its first read copies and checks the local header) and one past its first
  // MiB (the reads that complete it are lent from the reader's cache, not copied).
  for (const auto& [key, at] : {std::pair<std::string, uint64_t>{"small/exact20k.bin", 100},
                                {"big/a.bin", 1200000}}) {
    auto where = testing::Run({testing::MkpackPath(), "resolve", dir, key});
    ASSERT_EQ(where.exit_code, 0) << where.err;
    std::istringstream fields(where.out);
    std::string shard, offset;
    std::getline(fields, shard, '\t');
    std::getline(fields, offset, '\t');
    auto damage = testing::Sh(
        "cp -p '" + shard + "' '" + mnt_dir_ / "stamp" + "' && python3 -c \"import sys\n"
        "f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1)\n"
        "f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1]))\" '" + shard + "' " +
        std::to_string(std::stoull(offset) + at) + " && touch -r '" + mnt_dir_ / "stamp" +
        "' '" + shard + "'");
    ASSERT_EQ(damage.exit_code, 0) << damage.err;
  }
  Mount m({server_->url() + "/crc/media"}, Mnt(), CacheArgs());
  ASSERT_TRUE(m.ok()) << m.result().err;
  std::string bytes;
  EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/small/exact20k.bin", &bytes), EIO);
  EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/big/a.bin", &bytes), EIO);
  EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/big/b.bin", &bytes), 0);
  EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / "src/big/b.bin"));
  const nlohmann::json errors = testing::XattrJson(Mnt(), "user.packfs.errors");
  // Each damaged member is named, first with the mismatch, then for each read after it.
  std::set<std::string> paths, mismatched;
  for (const auto& e : errors) {
    const std::string message = e.value("message", "");
    paths.insert(e.value("path", ""));
    EXPECT_NE(message.find("CRC-32"), std::string::npos) << e;
    if (message.find("CRC-32 mismatch") != std::string::npos) mismatched.insert(e["path"]);
  }
  const std::set<std::string> damaged{"small/exact20k.bin", "big/a.bin"};
  EXPECT_EQ(paths, damaged) << errors;
  EXPECT_EQ(mismatched, damaged) << errors;
}

TEST_F(RemoteMountTest, UnreachableServerFailsTheMount) {
  const int port = testing::FreeLoopbackPort();
  Mount m({"http://127.0.0.1:" + std::to_string(port) + "/media"}, Mnt(), CacheArgs());
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.result().err.find("127.0.0.1"), std::string::npos) << m.result().err;
}

// The mount's user.packfs.errors as one line of JSON text.
std::string Errors(const std::string& mnt) {
  return testing::XattrJson(mnt, "user.packfs.errors").dump();
}

// No request per shard at mount: a shard that does not match the catalog (it grew after the
// catalog was made) mounts, and its first GET finds the size wrong: its members fail with EIO,
// named with the advice in user.packfs.errors, and the other shards serve.
TEST_F(RemoteMountTest, StaleCatalogFailsThatShardsReadsNotTheMount) {
  const std::string dir = *tmp_ / "www/stale/media";
  testing::Sh("mkdir -p '" + dir + "' && cp -p '" + (*tmp_ / "www/media") + "'/pack-*.zip '" +
              (*tmp_ / "www/media/.packfs-catalog.sqlite") + "' '" + dir + "'/ && echo junk >> '" +
              dir + "/pack-0001.zip'");
  Mount m({server_->url() + "/stale/media"}, Mnt(), CacheArgs());
  ASSERT_TRUE(m.ok()) << m.result().err;
  int failed = 0, served = 0;
  for (const auto& [shard, keys] : FilesByShard(Mnt(), *tmp_ / "src")) {
    for (const auto& key : keys) {
      if (fs::file_size(*tmp_ / ("src/" + key)) == 0) continue;  // nothing to read, no request
      std::string bytes;
      if (shard == "media/pack-0001.zip") {
        EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/" + key, &bytes), EIO) << key;
        ++failed;
      } else {
        ASSERT_EQ(testing::ReadWithErrno(Mnt() + "/" + key, &bytes), 0) << key;
        EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / ("src/" + key))) << key;
        ++served;
      }
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(served, 0);
  const std::string errors = Errors(Mnt());
  EXPECT_NE(errors.find("media/pack-0001.zip"), std::string::npos) << errors;
  EXPECT_NE(errors.find("the catalog is stale"), std::string::npos) << errors;
  EXPECT_NE(errors.find("mkpack catalog"), std::string::npos) << errors;
}

// Shards changed on the server under a live mount: one grows before any read of it (its first
// GET finds the size wrong), one is rewritten in place with the same bytes and size after its
// first read (nginx's ETag changes with the mtime, so If-Match fails). Their members fail with
// EIO; the other shards keep serving and the mount stays up. (-o exact_gets: each file read is a
// GET of its own bytes, so no file read after the change was fetched before it with the first
// one's block; such a file would be served from memory, the bytes of the version the mount saw.)
TEST_F(RemoteMountTest, ReplacedShardsFailWithEioOthersStillServe) {
  const std::string dir = *tmp_ / "www/live/media";
  testing::Sh("mkdir -p '" + dir + "' && cp -p '" + (*tmp_ / "www/media") + "'/pack-*.zip '" +
              (*tmp_ / "www/media/.packfs-catalog.sqlite") + "' '" + dir + "'/");
  std::vector<std::string> args = CacheArgs();
  args.insert(args.end(), {"-o", "exact_gets"});
  Mount m({server_->url() + "/live/media"}, Mnt(), args);
  ASSERT_TRUE(m.ok()) << m.result().err;
  // Which files live in which shard (read nothing yet, so no page cache hides a change).
  std::map<std::string, std::vector<std::string>> by_shard = FilesByShard(Mnt(), *tmp_ / "src");
  ASSERT_GE(by_shard.size(), 3u);
  auto it = by_shard.begin();
  const auto& [keep_shard, keep] = *it++;
  const auto& [grown_shard, grown] = *it++;
  const auto& [same_size_shard, same_size] = *it;
  std::vector<std::string> same_size_files;  // with bytes to read
  for (const auto& key : same_size) {
    if (fs::file_size(*tmp_ / ("src/" + key)) > 0) same_size_files.push_back(key);
  }
  ASSERT_GE(same_size_files.size(), 2u);
  std::string first;
  ASSERT_EQ(testing::ReadWithErrno(Mnt() + "/" + same_size_files[0], &first), 0);
  EXPECT_TRUE(first == testing::ReadFile(*tmp_ / ("src/" + same_size_files[0])));
  const std::string grown_file = dir + "/" + grown_shard.substr(grown_shard.find('/') + 1);
  const std::string same_file = dir + "/" + same_size_shard.substr(same_size_shard.find('/') + 1);
  testing::Sh("cat '" + grown_file + "' '" + grown_file + "' > '" + grown_file + ".new' && mv '" +
              grown_file + ".new' '" + grown_file + "'");
  testing::Sh("touch -d '2001-01-01' '" + same_file + "'");
  for (const auto& key : grown) {
    if (fs::file_size(*tmp_ / ("src/" + key)) == 0) continue;  // nothing to read, no request
    std::string bytes;
    EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/" + key, &bytes), EIO) << key;
  }
  for (size_t i = 1; i < same_size_files.size(); ++i) {
    std::string bytes;
    EXPECT_EQ(testing::ReadWithErrno(Mnt() + "/" + same_size_files[i], &bytes), EIO) << same_size_files[i];
  }
  for (const auto& key : keep) {
    std::string bytes;
    ASSERT_EQ(testing::ReadWithErrno(Mnt() + "/" + key, &bytes), 0) << key;
    EXPECT_TRUE(bytes == testing::ReadFile(*tmp_ / ("src/" + key))) << key;
  }
  const std::string errors = Errors(Mnt());
  EXPECT_NE(errors.find("the catalog is stale"), std::string::npos) << errors;
  EXPECT_NE(errors.find("412"), std::string::npos) << errors;
  EXPECT_TRUE(testing::IsMounted(Mnt()));
  struct stat st;
  EXPECT_EQ(::stat((Mnt() + "/big").c_str(), &st), 0);
}

// S3 through moto: signed requests with a catalog, then an unsigned listing without one.
class S3MountTest : public testing::WithSignedS3<RemoteMountTest> {
 protected:
  static void SetUpTestSuite() {
    RemoteMountTest::SetUpTestSuite();
    const std::string media = *tmp_ / "www/media";
    StartMoto(
        "import glob, os\n"
        "s3.create_bucket(Bucket='packfs-signed')\n"
        "s3.create_bucket(Bucket='packfs-nocat', ACL='public-read')\n"
        "for p in sorted(glob.glob('" + media + "/pack-*.zip')):\n"
        "    body = open(p, 'rb').read()\n"
        "    s3.put_object(Bucket='packfs-signed', Key='sets/media/' + os.path.basename(p),\n"
        "                  Body=body)\n"
        "    s3.put_object(Bucket='packfs-nocat', Key='media/' + os.path.basename(p), Body=body,\n"
        "                  ACL='public-read')\n"
        "s3.put_object(Bucket='packfs-signed', Key='sets/media/.packfs-catalog.sqlite',\n"
        "              Body=open('" + media + "/.packfs-catalog.sqlite', 'rb').read())\n"
        "s3.put_object(Bucket='packfs-nocat', Key='media/notes.txt', Body=b'not a shard')\n");
  }
};

TEST_F(S3MountTest, SignedBucketWithCatalog) {
  SignIn(user_->secret);
  std::vector<std::string> args = CacheArgs();
  args.insert(args.end(), {"--endpoint", moto_->endpoint(), "--region", "us-east-1"});
  Mount m({"s3://packfs-signed/sets/media"}, Mnt(), args);
  ASSERT_TRUE(m.ok()) << m.result().err;
  ASSERT_NO_FATAL_FAILURE(testing::ExpectSameFiles(*tmp_ / "src", Mnt()));
  const std::string ref = testing::XattrText(Mnt() + "/big/b.bin", "user.packfs.ref");
  EXPECT_EQ(ref.rfind("zip://big/b.bin::media/pack-", 0), 0u) << ref;
}

TEST_F(S3MountTest, WrongSecretFailsTheMount) {
  SignIn("not-the-secret");
  std::vector<std::string> args = CacheArgs();
  args.insert(args.end(), {"--endpoint", moto_->endpoint()});
  Mount m({"s3://packfs-signed/sets/media"}, Mnt(), args);
  EXPECT_FALSE(m.ok());
  EXPECT_NE(m.result().err.find(".packfs-catalog.sqlite"), std::string::npos) << m.result().err;
}

TEST_F(S3MountTest, UnsignedBucketWithoutCatalogIsListedAndIndexed) {
  // A public bucket read anonymously (moto's signature check also mis-encodes "/" in a listing
  // prefix, so a signed listing could not be tested here).
  moto_->SetAuth(false);
  std::vector<std::string> args = CacheArgs();
  args.insert(args.end(), {"--endpoint", moto_->endpoint(), "--anonymous"});
  Mount m({"s3://packfs-nocat/media"}, Mnt(), args);
  ASSERT_TRUE(m.ok()) << m.result().err;
  ASSERT_NO_FATAL_FAILURE(testing::ExpectSameFiles(*tmp_ / "src", Mnt()));
}

}  // namespace
}  // namespace packfs
