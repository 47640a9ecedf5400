// Opening a source (core/open_source) over real files: SOURCE arguments resolved (directories,
// tar files grouped per directory, URLs checked for form, bad ones refused naming them), each
// kind of location classified and opened as its kind of set (pack directory, tar shards, loose
// LeRobot dataset, remote set over a real nginx), and the LeRobot view each dataset gets by
// mode and layout, with its warnings and errors.
#include "core/open/open_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/lerobot/lerobot_v21_view.h"
#include "tests/support/http_servers.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Loose = OpenSourceOptions::Loose;
using LeRobot = OpenSourceOptions::LeRobot;

// `mkpack pack` of a small tree into `out` (a zip pack set with its catalog).
void PackTree(const std::string& src, const std::string& out) {
  testing::WriteFile(src + "/a/one.txt", "one");
  testing::WriteFile(src + "/b/two.bin", testing::RandomBytes(5000, 7));
  testing::RunResult r =
      testing::Run({testing::MkpackPath(), "pack", src, out, "--no-fsync"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Two tar shards in `dir`: x.tar holds x/1.txt, y.tar holds y/2.txt.
void MakeTars(const std::string& dir) {
  TempDir staging;
  testing::WriteFile(staging / "x/1.txt", "first");
  testing::WriteFile(staging / "y/2.txt", "second");
  fs::create_directories(dir);
  ASSERT_EQ(testing::Run({"tar", "-C", staging.path(), "-cf", dir + "/x.tar", "x"}).exit_code, 0);
  ASSERT_EQ(testing::Run({"tar", "-C", staging.path(), "-cf", dir + "/y.tar", "y"}).exit_code, 0);
}

// A copy of the real LeRobot v3 fixture (meta/ and data/, no videos) at `dir`.
void CopyLeRobotFixture(const std::string& dir) {
  const std::string fixture = testing::FixturesDir() + "/lerobot-v3-record-test";
  ASSERT_EQ(testing::Sh("cp -rp '" + fixture + "' '" + dir + "' && chmod -R u+w '" + dir + "'")
                .exit_code, 0);
}

// Makes the dataset at `dir` say it is LeRobot v2.1 (with v2.1 path templates, which a v2.1
// meta/info.json must have).
void MakeV21Info(const std::string& dir) {
  std::string info = testing::ReadFile(dir + "/meta/info.json");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"v3.0\"", "\"v2.1\""},
           {"data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"},
           {"videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"}}) {
    const size_t at = info.find(from);
    ASSERT_NE(at, std::string::npos) << from << " in " << info;
    info.replace(at, from.size(), to);
  }
  testing::WriteFile(dir + "/meta/info.json", info);
}

bool Has(const PackSet& set, const std::string& key) {
  Result<std::optional<Node>> node = set.catalog().Find(key);
  return node.ok() && node->has_value();
}

std::string ReadKey(const PackSet& set, const std::string& key) {
  Result<std::optional<Node>> node = set.catalog().Find(key);
  if (!node.ok() || !*node || (*node)->is_dir()) return "<absent>";
  std::string out((*node)->size, '\0');
  Result<size_t> got =
      set.Read(**node, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  if (!got.ok()) return "<error: " + got.status().ToString() + ">";
  out.resize(*got);
  return out;
}

SourceKind KindOf(const std::string& location, const OpenSourceOptions& options) {
  Result<SourceKind> kind = ClassifySource(SourceLocation{location, {}}, options);
  EXPECT_TRUE(kind.ok()) << location << ": " << kind.status().ToString();
  return kind.ok() ? *kind : SourceKind::kPackDir;
}

TEST(ResolveSources, DirectoriesAndUrlsKeepTheirOrder) {
  TempDir tmp;
  fs::create_directories(tmp / "media");
  auto sources = ResolveSources({tmp / "media/", "https://example.com/data/media"});
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  ASSERT_EQ(sources->size(), 2u);
  EXPECT_EQ((*sources)[0].location, fs::canonical(tmp / "media").string());
  EXPECT_TRUE((*sources)[0].shard_files.empty());
  EXPECT_EQ((*sources)[1].location, "https://example.com/data/media");
  EXPECT_TRUE((*sources)[1].shard_files.empty());
}

TEST(ResolveSources, RelativePathsBecomeAbsolute) {
  TempDir tmp;
  fs::create_directories(tmp / "media");
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  auto sources = ResolveSources({"media"});
  fs::current_path(cwd);
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ((*sources)[0].location, fs::canonical(tmp / "media").string());
}

TEST(ResolveSources, TarFilesOfOneDirectoryBecomeOneSource) {
  TempDir tmp;
  MakeTars(tmp / "shards");
  fs::create_directories(tmp / "other");
  auto sources = ResolveSources({tmp / "shards/x.tar", tmp / "other", tmp / "shards/y.tar"});
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  ASSERT_EQ(sources->size(), 2u);
  EXPECT_EQ((*sources)[0].location, fs::canonical(tmp / "shards").string());
  EXPECT_EQ((*sources)[0].shard_files, (std::vector<std::string>{"x.tar", "y.tar"}));
  EXPECT_EQ((*sources)[1].location, fs::canonical(tmp / "other").string());
  // The directory itself stays a source of its own beside its tar files given one by one.
  auto both = ResolveSources({tmp / "shards/x.tar", tmp / "shards"});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].shard_files, std::vector<std::string>{"x.tar"});
  EXPECT_TRUE((*both)[1].shard_files.empty());
}

TEST(ResolveSources, BadSourcesFailNamingThem) {
  TempDir tmp;
  const std::string missing = tmp / "missing";
  auto r = ResolveSources({missing});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(), "source " + missing + ": No such file or directory");

  testing::WriteFile(tmp / "notes.txt", "not a shard");
  r = ResolveSources({tmp / "notes.txt"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "source " + (tmp / "notes.txt") +
                                      " is neither a directory (give the pack directory holding "
                                      "pack-0000.zip or *.tar) nor a .tar file");

  fs::create_directories(tmp / "media");
  r = ResolveSources({tmp / "media", tmp / "media/"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "source " + fs::canonical(tmp / "media").string() + " is given twice");

  r = ResolveSources({"https://h/data", "HTTPS://h/data"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "source HTTPS://h/data is given twice");

  r = ResolveSources({"https://user:pw@h/data"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("source: ", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find("https://user:pw@h/data"), std::string::npos)
      << r.status().message();
}

TEST(ClassifySource, EachLocationGetsItsKind) {
  TempDir tmp;
  PackTree(tmp / "src", tmp / "media");
  MakeTars(tmp / "tars");
  testing::WriteFile(tmp / "plain/readme.txt", "loose");
  CopyLeRobotFixture(tmp / "ds");

  OpenSourceOptions remote;
  remote.remote.emplace();
  EXPECT_EQ(KindOf("s3://bucket/data/media", remote), SourceKind::kRemote);
  EXPECT_EQ(KindOf("HTTP://host/media", remote), SourceKind::kRemote);
  // Without remote options a URL is a local path (commands over local sets only).
  EXPECT_EQ(KindOf("https://host/media", OpenSourceOptions{}), SourceKind::kPackDir);

  for (Loose loose : {Loose::kNever, Loose::kLeRobot, Loose::kAlways}) {
    OpenSourceOptions o;
    o.loose = loose;
    SCOPED_TRACE(static_cast<int>(loose));
    EXPECT_EQ(KindOf(tmp / "media", o), SourceKind::kPackDir);
    EXPECT_EQ(KindOf(tmp / "tars", o), SourceKind::kPackDir);
    EXPECT_EQ(KindOf(tmp / "plain", o),
              loose == Loose::kAlways ? SourceKind::kLooseFiles : SourceKind::kPackDir);
    EXPECT_EQ(KindOf(tmp / "ds", o),
              loose == Loose::kNever ? SourceKind::kPackDir : SourceKind::kLooseFiles);
  }
  // Tar files given one by one are shards, whatever the directory holds.
  OpenSourceOptions always;
  always.loose = Loose::kAlways;
  auto kind = ClassifySource(SourceLocation{tmp / "plain", {"readme.txt"}}, always);
  ASSERT_TRUE(kind.ok());
  EXPECT_EQ(*kind, SourceKind::kPackDir);
  // Only kAlways lists a directory it cannot read itself; the others leave it to the open.
  kind = ClassifySource(SourceLocation{tmp / "missing", {}}, always);
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("cannot list the directory " + (tmp / "missing")),
            std::string::npos) << kind.status().message();
  OpenSourceOptions lerobot;
  lerobot.loose = Loose::kLeRobot;
  EXPECT_EQ(KindOf(tmp / "missing", lerobot), SourceKind::kPackDir);
}

TEST(OpenSourceSet, OpensEachKindOfLocalLocation) {
  TempDir tmp;
  PackTree(tmp / "src", tmp / "media");
  MakeTars(tmp / "tars");
  CopyLeRobotFixture(tmp / "ds");
  OpenSourceOptions o;
  o.loose = Loose::kLeRobot;

  auto zip = OpenSourceSet(SourceLocation{tmp / "media", {}}, o);
  ASSERT_TRUE(zip.ok()) << zip.status().ToString();
  EXPECT_FALSE((*zip)->raw_members());
  EXPECT_EQ(ReadKey(**zip, "a/one.txt"), "one");

  auto tars = OpenSourceSet(SourceLocation{tmp / "tars", {}}, o);
  ASSERT_TRUE(tars.ok()) << tars.status().ToString();
  EXPECT_EQ(ReadKey(**tars, "x/1.txt"), "first");
  EXPECT_EQ(ReadKey(**tars, "y/2.txt"), "second");

  auto one_tar = OpenSourceSet(SourceLocation{tmp / "tars", {"y.tar"}}, o);
  ASSERT_TRUE(one_tar.ok()) << one_tar.status().ToString();
  EXPECT_FALSE(Has(**one_tar, "x/1.txt"));
  EXPECT_EQ(ReadKey(**one_tar, "y/2.txt"), "second");

  auto loose = OpenSourceSet(SourceLocation{tmp / "ds", {}}, o);
  ASSERT_TRUE(loose.ok()) << loose.status().ToString();
  EXPECT_TRUE((*loose)->raw_members());
  EXPECT_EQ(ReadKey(**loose, "meta/info.json"), testing::ReadFile(tmp / "ds/meta/info.json"));
}

TEST(OpenSourceSet, BadLocalLocationsFailNamingThem) {
  TempDir tmp;
  testing::WriteFile(tmp / "plain/readme.txt", "loose");
  for (Loose loose : {Loose::kNever, Loose::kLeRobot}) {
    OpenSourceOptions o;
    o.loose = loose;
    // A directory without shards is no pack directory (and, without meta/info.json, no dataset).
    auto set = OpenSourceSet(SourceLocation{tmp / "plain", {}}, o);
    ASSERT_FALSE(set.ok());
    EXPECT_NE(set.status().message().find(tmp / "plain"), std::string::npos)
        << set.status().message();
    set = OpenSourceSet(SourceLocation{tmp / "missing", {}}, o);
    ASSERT_FALSE(set.ok());
    EXPECT_NE(set.status().message().find(tmp / "missing"), std::string::npos)
        << set.status().message();
  }
  OpenSourceOptions always;
  always.loose = Loose::kAlways;
  auto set = OpenSourceSet(SourceLocation{tmp / "missing", {}}, always);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("cannot list the directory " + (tmp / "missing")),
            std::string::npos) << set.status().message();
}

TEST(OpenSourceSet, UrlsOpenRemoteSets) {
  TempDir tmp;
  PackTree(tmp / "src", tmp / "www/media");
  std::string why;
  auto server = testing::NginxServer::Start(tmp / "www", &why);
  if (server == nullptr) GTEST_SKIP() << why;
  OpenSourceOptions o;
  o.remote.emplace();
  o.remote->s3.anonymous = true;
  o.remote->cache_dir = tmp / "cache";
  const std::string url = server->url() + "/media";
  auto set = OpenSourceSet(SourceLocation{url, {}}, o);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ((*set)->dir(), url);
  EXPECT_EQ(ReadKey(**set, "a/one.txt"), "one");
  // Nothing there: the error names the URL.
  auto none = OpenSourceSet(SourceLocation{server->url() + "/nothing", {}}, o);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(server->url() + "/nothing"), std::string::npos)
      << none.status().message();
}

class OpenSourceLeRobot : public ::testing::Test {
 protected:
  void SetUp() override {
    CopyLeRobotFixture(ds_);
    options_.loose = Loose::kLeRobot;
    options_.lerobot = LeRobot::kAuto;
    options_.warn = [this](const std::string& w) { warnings_.push_back(w); };
  }
  Result<OpenedSource> Open() { return OpenSource(SourceLocation{ds_, {}}, options_); }

  TempDir tmp_;
  const std::string ds_ = tmp_ / "ds";
  OpenSourceOptions options_;
  std::vector<std::string> warnings_;
};

TEST_F(OpenSourceLeRobot, V3DatasetGetsTheV21LayoutByDefault) {
  auto opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_NE(opened->view, nullptr);
  // The dataset moves under v3/; the view serves the v2.1 metadata at the root.
  EXPECT_TRUE(Has(*opened->set, std::string(kLeRobotV3Prefix) + "meta/info.json"));
  EXPECT_FALSE(Has(*opened->set, "meta/info.json"));
  EXPECT_NE(ReadKey(*opened->view, "meta/info.json").find("\"codebase_version\": \"v2.1\""),
            std::string::npos);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(OpenSourceLeRobot, V3LayoutKeepsTheDatasetAtItsPaths) {
  options_.lerobot_layout = LeRobotLayout::kV3;
  options_.lerobot_layout_given = true;
  auto opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_NE(opened->view, nullptr);
  EXPECT_EQ(ReadKey(*opened->set, "meta/info.json"), testing::ReadFile(ds_ + "/meta/info.json"));
  EXPECT_TRUE(Has(*opened->view, "meta/episodes.jsonl"));
  EXPECT_FALSE(Has(*opened->view, "meta/info.json"));
}

TEST_F(OpenSourceLeRobot, NoViewWhenOffConvertedOrV2) {
  options_.lerobot = LeRobot::kOff;
  auto off = Open();
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->view, nullptr);
  EXPECT_TRUE(Has(*off->set, "meta/info.json"));

  options_.lerobot = LeRobot::kAuto;
  testing::WriteFile(ds_ + "/meta/episodes.jsonl", "{}\n");
  auto converted = Open();
  ASSERT_TRUE(converted.ok()) << converted.status().ToString();
  EXPECT_EQ(converted->view, nullptr);
  fs::remove(ds_ + "/meta/episodes.jsonl");

  MakeV21Info(ds_);
  auto v2 = Open();
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->view, nullptr);
  EXPECT_TRUE(warnings_.empty());
}

// --lerobot reads a v2.x dataset as v3, saying so first; its v2.1 path templates then do not
// fit the v3 tables, and the error names the source.
TEST_F(OpenSourceLeRobot, OnReadsAV2DatasetAsV3WithAWarning) {
  MakeV21Info(ds_);
  options_.lerobot = LeRobot::kOn;
  auto opened = Open();
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(warnings_[0], ds_ + "/meta/info.json says codebase_version 'v2.1'; reading it as v3 "
                                "as --lerobot asks");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message().rfind("LeRobot view of " + ds_ + ": ", 0), 0u)
      << opened.status().message();
}

TEST_F(OpenSourceLeRobot, OnWithoutInfoJsonFailsNamingTheSource) {
  PackTree(tmp_ / "src", tmp_ / "media");
  options_.lerobot = LeRobot::kOn;
  auto opened = OpenSource(SourceLocation{tmp_ / "media", {}}, options_);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kNotFound);
  EXPECT_EQ(opened.status().message(), "LeRobot view of " + (tmp_ / "media") + ": --lerobot: " +
                                           (tmp_ / "media") + " holds no meta/info.json");
}

TEST_F(OpenSourceLeRobot, V21LayoutThatCannotBeMadeFallsBackUnlessAskedFor) {
  fs::remove(ds_ + "/meta/tasks.parquet");
  auto fallback = Open();
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  ASSERT_NE(fallback->view, nullptr);
  EXPECT_TRUE(Has(*fallback->set, "meta/info.json"));  // the v3 layout
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("; showing the v3 layout (--lerobot-view v3)"), std::string::npos)
      << warnings_[0];

  options_.lerobot_layout_given = true;
  auto refused = Open();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("LeRobot view of " + ds_ + ": ", 0), 0u)
      << refused.status().message();
}

TEST_F(OpenSourceLeRobot, OpenSourcesPutsTheViewsLast) {
  PackTree(tmp_ / "src", tmp_ / "media");
  auto sets = OpenSources({SourceLocation{ds_, {}}, SourceLocation{tmp_ / "media", {}}},
                          options_);
  ASSERT_TRUE(sets.ok()) << sets.status().ToString();
  ASSERT_EQ(sets->size(), 3u);
  EXPECT_TRUE(Has(*(*sets)[0], std::string(kLeRobotV3Prefix) + "meta/info.json"));
  EXPECT_TRUE(Has(*(*sets)[1], "a/one.txt"));
  EXPECT_TRUE(Has(*(*sets)[2], "meta/info.json"));  // the view
  // One bad source fails the whole open, naming it.
  auto bad = OpenSources({SourceLocation{ds_, {}}, SourceLocation{tmp_ / "missing", {}}},
                         options_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(tmp_ / "missing"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace packfs
