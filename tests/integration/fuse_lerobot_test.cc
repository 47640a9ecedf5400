// LeRobot v3 datasets through real mounts and real conversions, with ffmpeg as the oracle: every
// episode video the mount synthesizes (and every one `mkpack convert-lerobot` writes) decodes to
// the same frame hashes as that episode's own separate encode, with ffprobe counting `length`
// frames; the dataset's own files stay byte-identical; meta/episodes.jsonl lists the episodes;
// the v2.1 data/ episode parquet files hold, as hyparquet reads them, each episode's v3 rows.
// Datasets come from scripts/make-lerobot-dataset.py (H.264 with B-frames; several files per
// camera; to_timestamp a frame short on odd episodes) and from the real LeRobot metadata fixture
// with AV1 videos encoded to match it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "core/base/shard_source.h"
#include "core/lerobot/lerobot_v21.h"
#include "tests/support/mount_util.h"
#include "tests/support/mp4_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using nlohmann::json;
using testing::TempDir;

// A fresh mountpoint directory.
std::string MountDir(const std::string& path) {
  std::filesystem::create_directories(path);
  return path;
}

std::string V21Path(uint64_t episode, const std::string& camera, uint64_t chunks_size = 1000) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "videos/chunk-%03llu/%s/episode_%06llu.mp4",
                static_cast<unsigned long long>(episode / chunks_size), camera.c_str(),
                static_cast<unsigned long long>(episode));
  return buf;
}

class LeRobotMountTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::FuseAvailable() || !testing::HasCommand("ffmpeg") ||
        !testing::HasCommand("node")) {
      return;
    }
    tmp_ = std::make_unique<TempDir>();
    dataset_ = *tmp_ / "ds";
    testing::RunResult r = testing::Run(
        {"python3", std::string(PACKFS_SOURCE_DIR) + "/scripts/make-lerobot-dataset.py", dataset_,
         "--episodes", "5", "--cameras", "2", "--codec", "h264", "--episodes-per-file", "3",
         "--frames", "12:30", "--size", "96x64", "--short-to", "--seed", "7"});
    if (r.exit_code != 0) {
      setup_error_ = "make-lerobot-dataset.py failed: " + r.err;
      return;
    }
    manifest_ = json::parse(testing::ReadFile(dataset_ + ".manifest.json"));
  }
  static void TearDownTestSuite() {
    tmp_.reset();
  }
  void SetUp() override {
    if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse or fusermount3";
    if (!testing::HasCommand("ffmpeg")) GTEST_SKIP() << "no ffmpeg";
    if (!testing::HasCommand("node")) GTEST_SKIP() << "no node (the parquet writer of the generator)";
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  // Every episode and camera under `root` (a mount or an unpacked dir) against the originals.
  // Under sanitizers (PACKFS_SANITIZED=1) the first and last episodes only: the code paths are the
  // same and ffmpeg's decoding is most of the time. `missing`: source MP4s (dataset-relative)
  // deleted from the dataset; the episode files cut from them must be absent, every other one
  // there and exact.
  static void ExpectEpisodesMatchOriginals(const std::string& root,
                                           const std::set<std::string>& missing = {}) {
    const bool sanitized = std::getenv("PACKFS_SANITIZED") != nullptr;
    const size_t count = manifest_["episodes"].size();
    std::set<std::string> missing_seen;
    size_t checked = 0;
    for (const json& ep : manifest_["episodes"]) {
      const uint64_t e = ep["episode_index"].get<uint64_t>();
      for (const auto& [cam, info] : ep["cameras"].items()) {
        const std::string path = root + "/" + V21Path(e, cam);
        SCOPED_TRACE(path);
        struct stat st;
        if (missing.count(info["video"].get<std::string>()) != 0) {
          missing_seen.insert(info["video"].get<std::string>());
          EXPECT_NE(::stat(path.c_str(), &st), 0) << "shown though its source is missing";
          continue;
        }
        if (sanitized && e != 0 && e + 1 != count) continue;
        ++checked;
        ASSERT_EQ(::stat(path.c_str(), &st), 0) << "missing";
        const std::vector<std::string>& want = OriginalHashes(info["original"]);
        ASSERT_FALSE(want.empty());
        EXPECT_EQ(testing::FrameHashes(path), want);
        const testing::FramesAndDuration fd = testing::ProbeFramesAndDuration(path);
        EXPECT_EQ(fd.frames, ep["length"].get<int64_t>());
        EXPECT_NEAR(fd.duration, ep["length"].get<double>() / 30.0, 0.05);
      }
    }
    EXPECT_EQ(missing_seen, missing) << "a deleted file held no episode of the manifest";
    EXPECT_GT(checked, 0u);
  }

  // A copy of the generated dataset at `dir` without the source MP4s `remove` (dataset-relative),
  // as an interrupted download leaves it.
  static void PartialCopy(const std::string& dir, const std::set<std::string>& remove) {
    ASSERT_EQ(testing::Sh("cp -r '" + dataset_ + "' '" + dir + "'").exit_code, 0);
    for (const std::string& rel : remove) {
      ASSERT_EQ(::unlink((dir + "/" + rel).c_str()), 0) << rel;
    }
  }

  // The originals' frame hashes, decoded once for the whole suite (every test compares against
  // them; ffmpeg's start-up is most of this test's time).
  static const std::vector<std::string>& OriginalHashes(const std::string& original) {
    auto it = original_hashes_.find(original);
    if (it == original_hashes_.end()) {
      it = original_hashes_.emplace(original, testing::FrameHashes(original)).first;
    }
    return it->second;
  }

  static std::string ReadJsonl(const std::string& path) { return testing::ReadFile(path); }

  static void ExpectEpisodesJsonl(const std::string& path) {
    std::istringstream in(testing::ReadFile(path));
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      json j = json::parse(line);
      const json& ep = manifest_["episodes"][n];
      EXPECT_EQ(j["episode_index"], ep["episode_index"]);
      EXPECT_EQ(j["length"], ep["length"]);
      ASSERT_EQ(j["tasks"].size(), 1u);
      EXPECT_EQ(j["tasks"][0], ep["task"]);
      ++n;
    }
    EXPECT_EQ(n, manifest_["episodes"].size());
  }

  // Rows of a parquet file as hyparquet (an independent pure-JS reader) reads them.
  static json ReadParquetRows(const std::string& path) {
    const std::string mjs =
        std::string(PACKFS_SOURCE_DIR) + "/scripts/lerobot-parquet/parquet.mjs";
    testing::RunResult r = testing::Run({"node", mjs, "read", path});
    EXPECT_EQ(r.exit_code, 0) << path << ": " << r.err;
    if (r.exit_code != 0) return json::array();
    return json::parse(r.out)["rows"];
  }

  static std::string V21DataPath(uint64_t episode) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "data/chunk-%03llu/episode_%06llu.parquet",
                  static_cast<unsigned long long>(episode / 1000),
                  static_cast<unsigned long long>(episode));
    return buf;
  }

  // The v2.1 episode data files under `root`: data/ holds one file per episode and nothing else;
  // each, read by hyparquet, holds exactly the rows of the v3 data files whose episode_index is
  // its episode, as many as the episode's length; stat sizes equal the bytes read; the row counts
  // add up to info.json's total_frames.
  static void ExpectV21DataMatchesSource(const std::string& root) {
    std::vector<std::string> sources;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dataset_ + "/data")) {
      if (e.is_regular_file() && e.path().extension() == ".parquet") {
        sources.push_back(e.path().string());
      }
    }
    std::sort(sources.begin(), sources.end());
    ASSERT_FALSE(sources.empty());
    std::map<int64_t, json> want;
    for (const std::string& src : sources) {
      for (const json& row : ReadParquetRows(src)) {
        json& rows = want[row["episode_index"].get<int64_t>()];
        if (rows.is_null()) rows = json::array();
        rows.push_back(row);
      }
    }
    std::set<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/data")) {
      if (!e.is_directory()) files.insert(std::filesystem::relative(e.path(), root).string());
    }
    std::set<std::string> expected;
    const size_t episodes = manifest_["episodes"].size();
    for (uint64_t e = 0; e < episodes; ++e) expected.insert(V21DataPath(e));
    EXPECT_EQ(files, expected);
    EXPECT_EQ(want.size(), episodes);
    uint64_t total = 0;
    for (uint64_t e = 0; e < episodes; ++e) {
      const std::string path = root + "/" + V21DataPath(e);
      SCOPED_TRACE(path);
      struct stat st {};
      ASSERT_EQ(::stat(path.c_str(), &st), 0);
      EXPECT_EQ(static_cast<uint64_t>(st.st_size), testing::ReadBytes(path).size());
      const json rows = ReadParquetRows(path);
      EXPECT_EQ(rows.size(), manifest_["episodes"][e]["length"].get<size_t>());
      EXPECT_EQ(rows, want[static_cast<int64_t>(e)]);
      total += rows.size();
    }
    const json info = json::parse(testing::ReadFile(root + "/meta/info.json"));
    EXPECT_EQ(total, info["total_frames"].get<uint64_t>());
  }

  // `root` is the default (v2.1) layout of the generated dataset, `err` the mount's stderr:
  // meta/ holds the v2.1 files as core/lerobot_v21 generates them from the dataset (Python's json
  // reads them), with the mtimes of the v3 files they come from; episodes_stats.jsonl is left out
  // with a warning (the generator's tables carry no stats for every feature, and camera stats
  // are not converted yet); data/ holds the v2.1 episode files, each exactly its episode's rows
  // of the v3 data (ExpectV21DataMatchesSource), with the mtime of its source; every v3 file is
  // under v3/, byte-identical; nothing else is at the root.
  // `exact_mtimes`: the source is the loose dataset (a pack keeps the mtimes zip can store).
  static void ExpectV21Layout(const std::string& root, const std::string& err,
                              bool exact_mtimes = true) {
    const std::string info_text = testing::ReadFile(dataset_ + "/meta/info.json");
    Result<LeRobotInfo> info = ParseLeRobotInfo(info_text, "info.json");
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    auto episodes_src = FileShardSource::Open(
        dataset_ + "/meta/episodes/chunk-000/file-000.parquet", "episodes");
    ASSERT_TRUE(episodes_src.ok());
    Result<std::vector<Episode>> episodes = ReadLeRobotEpisodes({episodes_src->get()}, *info);
    ASSERT_TRUE(episodes.ok()) << episodes.status().ToString();
    auto tasks_src = FileShardSource::Open(dataset_ + "/meta/tasks.parquet", "tasks");
    ASSERT_TRUE(tasks_src.ok());
    Result<std::vector<LeRobotTask>> tasks = ReadLeRobotTasks(**tasks_src);
    ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
    Result<std::string> want_info = LeRobotV21InfoJson(
        info_text, LeRobotV21TotalsOf(*episodes, tasks->size()), "info.json");
    ASSERT_TRUE(want_info.ok()) << want_info.status().ToString();

    EXPECT_EQ(testing::ReadFile(root + "/meta/info.json"), *want_info);
    EXPECT_EQ(testing::ReadFile(root + "/meta/episodes.jsonl"),
              LeRobotV21EpisodesJsonl(*episodes));
    EXPECT_EQ(testing::ReadFile(root + "/meta/tasks.jsonl"), LeRobotV21TasksJsonl(*tasks));
    EXPECT_EQ(tasks->size(), 2u);
    testing::RunResult py = testing::Run(
        {"/usr/bin/python3", "-c",
         "import json, sys\n"
         "r = sys.argv[1]\n"
         "info = json.load(open(r + '/meta/info.json'))\n"
         "assert info['codebase_version'] == 'v2.1', info['codebase_version']\n"
         "assert info['data_path'] == "
         "'data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet'\n"
         "assert info['video_path'] == "
         "'videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4'\n"
         "assert info['total_episodes'] == 5 and info['total_videos'] == 10\n"
         "assert info['total_tasks'] == 2 and info['chunks_size'] == 1000\n"
         "eps = [json.loads(l) for l in open(r + '/meta/episodes.jsonl')]\n"
         "assert [e['episode_index'] for e in eps] == list(range(5))\n"
         "assert sum(e['length'] for e in eps) == info['total_frames']\n"
         "tasks = [json.loads(l) for l in open(r + '/meta/tasks.jsonl')]\n"
         "assert [t['task_index'] for t in tasks] == [0, 1]\n"
         "for e in eps:\n"
         "    for k in [k for k, f in info['features'].items() if f['dtype'] == 'video']:\n"
         "        p = info['video_path'].format(episode_chunk=e['episode_index'] // 1000,\n"
         "                                      video_key=k, episode_index=e['episode_index'])\n"
         "        open(r + '/' + p, 'rb').close()\n"
         "print('ok')\n",
         root});
    EXPECT_EQ(py.exit_code, 0) << py.out << py.err;
    EXPECT_EQ(py.out, "ok\n");

    // Stable mtimes: those of the v3 files the metadata comes from.
    auto mtime = [](const std::string& path) {
      struct stat st {};
      EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
      return st.st_mtime;
    };
    EXPECT_EQ(mtime(root + "/meta/info.json"), mtime(root + "/v3/meta/info.json"));
    EXPECT_EQ(mtime(root + "/meta/tasks.jsonl"), mtime(root + "/v3/meta/tasks.parquet"));
    EXPECT_EQ(mtime(root + "/meta/episodes.jsonl"),
              mtime(root + "/v3/meta/episodes/chunk-000/file-000.parquet"));
    if (exact_mtimes) {
      EXPECT_EQ(mtime(root + "/meta/info.json"), mtime(dataset_ + "/meta/info.json"));
      EXPECT_EQ(mtime(root + "/v3/data/chunk-000/file-000.parquet"),
                mtime(dataset_ + "/data/chunk-000/file-000.parquet"));
    }

    EXPECT_FALSE(std::filesystem::exists(root + "/meta/episodes_stats.jsonl"));
    EXPECT_NE(err.find("without meta/episodes_stats.jsonl"), std::string::npos) << err;

    std::set<std::string> top;
    for (const auto& e : std::filesystem::directory_iterator(root)) {
      top.insert(e.path().filename().string());
    }
    EXPECT_EQ(top, (std::set<std::string>{"data", "meta", "v3", "videos"}));
    std::set<std::string> meta;
    for (const auto& e : std::filesystem::directory_iterator(root + "/meta")) {
      meta.insert(e.path().filename().string());
    }
    EXPECT_EQ(meta, (std::set<std::string>{"episodes.jsonl", "info.json", "tasks.jsonl"}));
    std::set<std::string> data_dirs;
    for (const auto& e : std::filesystem::directory_iterator(root + "/data")) {
      data_dirs.insert(e.path().filename().string());
    }
    EXPECT_EQ(data_dirs, (std::set<std::string>{"chunk-000"}));
    ExpectV21DataMatchesSource(root);
    EXPECT_EQ(mtime(root + "/" + V21DataPath(0)),
              mtime(root + "/v3/data/chunk-000/file-000.parquet"));
    // Every file of the dataset under v3/, byte for byte, and nothing else there.
    size_t files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dataset_)) {
      if (e.is_directory()) continue;
      const std::string rel = std::filesystem::relative(e.path(), dataset_).string();
      EXPECT_EQ(testing::Sha256File(root + "/v3/" + rel), testing::Sha256File(e.path().string()))
          << rel;
      ++files;
    }
    size_t shown = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/v3")) {
      if (!e.is_directory()) ++shown;
    }
    EXPECT_EQ(shown, files);
    EXPECT_GT(files, 5u);
  }

  static inline std::unique_ptr<TempDir> tmp_;
  static std::string dataset_;
  static json manifest_;
  static std::string setup_error_;
  static std::map<std::string, std::vector<std::string>> original_hashes_;
};

std::string LeRobotMountTest::dataset_;
json LeRobotMountTest::manifest_;
std::string LeRobotMountTest::setup_error_;
std::map<std::string, std::vector<std::string>> LeRobotMountTest::original_hashes_;

TEST_F(LeRobotMountTest, LooseV3DatasetShowsOneMp4PerEpisodeAndCamera) {
  TempDir mnt_dir;
  testing::Mount mnt({dataset_}, MountDir(mnt_dir / "mnt"), {"--lerobot-view", "v3"});
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  ExpectEpisodesMatchOriginals(mnt.path());
  ExpectEpisodesJsonl(mnt.path() + "/meta/episodes.jsonl");
  // The dataset's own files are there unchanged.
  for (const char* rel : {"meta/info.json", "meta/episodes/chunk-000/file-000.parquet",
                          "data/chunk-000/file-000.parquet",
                          "videos/observation.images.front/chunk-000/file-000.mp4",
                          "videos/observation.images.top/chunk-000/file-001.mp4"}) {
    EXPECT_EQ(testing::Sha256File(mnt.path() + "/" + rel), testing::Sha256File(dataset_ + "/" + rel))
        << rel;
  }
  // A slice is header + bytes of its source: the synthesized file is no bigger than its episode
  // plus a header, and reading it at random offsets agrees with a full read.
  const std::string ep1 = mnt.path() + "/" + V21Path(1, "observation.images.top");
  std::vector<uint8_t> whole = testing::ReadBytes(ep1);
  ASSERT_GT(whole.size(), 1000u);
  FILE* f = std::fopen(ep1.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  for (size_t off : {size_t{0}, size_t{7}, whole.size() / 2, whole.size() - 1}) {
    std::vector<uint8_t> buf(std::min<size_t>(4096, whole.size() - off));
    ASSERT_EQ(std::fseek(f, static_cast<long>(off), SEEK_SET), 0);
    ASSERT_EQ(std::fread(buf.data(), 1, buf.size(), f), buf.size());
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), whole.begin() + static_cast<long>(off)));
  }
  std::fclose(f);
  // --no-lerobot serves the files only.
  testing::Mount plain({dataset_}, MountDir(mnt_dir / "plain"), {"--no-lerobot"});
  ASSERT_TRUE(plain.ok()) << plain.result().err;
  struct stat st;
  EXPECT_NE(::stat((plain.path() + "/meta/episodes.jsonl").c_str(), &st), 0);
  EXPECT_NE(::stat((plain.path() + "/" + V21Path(0, "observation.images.front")).c_str(), &st), 0);
  EXPECT_EQ(::stat((plain.path() + "/meta/info.json").c_str(), &st), 0);
  EXPECT_FALSE(std::filesystem::exists(plain.path() + "/v3"));
  // The v3 layout has no v3/ directory and keeps the v3 info.json.
  EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/v3"));
  EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/meta/tasks.jsonl"));
}

// The default layout: the mount root is a v2.1 dataset, its episode videos frame-exact, the v3
// files under v3/.
TEST_F(LeRobotMountTest, DefaultLayoutIsAV21Dataset) {
  TempDir work;
  testing::Mount mnt({dataset_}, MountDir(work / "mnt"));
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  ExpectV21Layout(mnt.path(), mnt.result().err);
  ExpectEpisodesMatchOriginals(mnt.path());
  // Asked for explicitly, the same.
  testing::Mount again({dataset_}, MountDir(work / "again"), {"--lerobot-view", "v2.1"});
  ASSERT_TRUE(again.ok()) << again.result().err;
  EXPECT_EQ(testing::ReadFile(again.path() + "/meta/info.json"),
            testing::ReadFile(mnt.path() + "/meta/info.json"));
}

// Option errors: an unknown layout, and a layout with --no-lerobot.
TEST_F(LeRobotMountTest, LeRobotViewOptionIsChecked) {
  TempDir work;
  testing::Mount bad({dataset_}, MountDir(work / "bad"), {"--lerobot-view", "v2"});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.result().err.find("--lerobot-view"), std::string::npos) << bad.result().err;
  testing::Mount both({dataset_}, MountDir(work / "both"),
                      {"--lerobot-view", "v3", "--no-lerobot"});
  EXPECT_FALSE(both.ok());
  EXPECT_NE(both.result().err.find("contradict"), std::string::npos) << both.result().err;
}

TEST_F(LeRobotMountTest, PackedV3DatasetWorksTheSame) {
  TempDir work;
  testing::RunResult r =
      testing::Run({testing::MkpackPath(), "pack", dataset_, work / "media", "--max-pack-bytes",
                    "200K"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::Mount mnt({work / "media"}, MountDir(work / "mnt"));
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  ExpectEpisodesMatchOriginals(mnt.path());
  ExpectEpisodesJsonl(mnt.path() + "/meta/episodes.jsonl");
  ExpectV21Layout(mnt.path(), mnt.result().err, /*exact_mtimes=*/false);
  testing::Mount v3({work / "media"}, MountDir(work / "mnt-v3"), {"--lerobot-view", "v3"});
  ASSERT_TRUE(v3.ok()) << v3.result().err;
  EXPECT_EQ(testing::Sha256File(v3.path() + "/data/chunk-000/file-000.parquet"),
            testing::Sha256File(dataset_ + "/data/chunk-000/file-000.parquet"));
  ExpectEpisodesMatchOriginals(v3.path());
}

// A dataset missing one camera's source MP4s (an interrupted download) still mounts: the other
// camera's episodes play frame-exact, the missing camera's episode files are absent, the files
// that are there are served, and stderr names every missing file with its episodes.
TEST_F(LeRobotMountTest, PartialDatasetServesTheEpisodesItHolds) {
  TempDir work;
  const std::string ds = work / "ds";
  const std::set<std::string> missing = {"videos/observation.images.top/chunk-000/file-000.mp4",
                                         "videos/observation.images.top/chunk-000/file-001.mp4"};
  PartialCopy(ds, missing);
  testing::Mount mnt({ds}, MountDir(work / "mnt"));
  ASSERT_EQ(mnt.result().exit_code, 0) << mnt.result().err;
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  const std::string& err = mnt.result().err;
  EXPECT_NE(err.find("videos/observation.images.top/chunk-000/file-000.mp4 (episodes 0-2 of "
                     "camera observation.images.top)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("videos/observation.images.top/chunk-000/file-001.mp4 (episodes 3-4 of "
                     "camera observation.images.top)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("observation.images.front"), std::string::npos) << err;
  ExpectEpisodesMatchOriginals(mnt.path(), missing);
  EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/videos/chunk-000/observation.images.top"));
  // Every episode is still in the tables and in meta/episodes.jsonl; the files are served
  // (under v3/ in the default v2.1 layout).
  ExpectEpisodesJsonl(mnt.path() + "/meta/episodes.jsonl");
  for (const char* rel : {"meta/info.json", "meta/episodes/chunk-000/file-000.parquet",
                          "data/chunk-000/file-000.parquet",
                          "videos/observation.images.front/chunk-000/file-000.mp4",
                          "videos/observation.images.front/chunk-000/file-001.mp4"}) {
    EXPECT_EQ(testing::Sha256File(mnt.path() + "/v3/" + rel),
              testing::Sha256File(ds + "/" + rel))
        << rel;
  }
  for (const std::string& rel : missing) {
    EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/v3/" + rel)) << rel;
  }
}

// `mkpack convert-lerobot` of a dataset missing two source MP4s (one of each camera): refused by
// default and in --dry-run, naming both; with --missing skip the rest is converted, the skipped
// episode videos listed in video_index.json, and the converted set serves them frame-exact.
TEST_F(LeRobotMountTest, ConvertPartialDatasetRefusesOrSkipsTheMissingEpisodes) {
  TempDir work;
  const std::string ds = work / "ds";
  const std::string top0 = "videos/observation.images.top/chunk-000/file-000.mp4";
  const std::string front1 = "videos/observation.images.front/chunk-000/file-001.mp4";
  PartialCopy(ds, {top0, front1});
  const std::string dst = work / "episodes";
  auto expect_lists_both = [&](const testing::RunResult& r) {
    EXPECT_NE(r.err.find(top0 + " (episodes 0-2 of camera observation.images.top)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(front1 + " (episodes 3-4 of camera observation.images.front)"),
              std::string::npos)
        << r.err;
  };
  for (bool dry : {false, true}) {
    SCOPED_TRACE(dry ? "--dry-run" : "convert");
    std::vector<std::string> args = {testing::MkpackPath(), "convert-lerobot", ds, dst};
    if (dry) args.push_back("--dry-run");
    testing::RunResult refused = testing::Run(args);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    expect_lists_both(refused);
    EXPECT_NE(refused.err.find("--missing skip"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(dst));
  }
  testing::RunResult dry = testing::Run(
      {testing::MkpackPath(), "convert-lerobot", ds, dst, "--missing", "skip", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 1) << dry.err;
  expect_lists_both(dry);
  EXPECT_NE(dry.out.find(V21Path(1, "observation.images.top") +
                         "\tskipped: " + top0 + " is missing"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find(V21Path(4, "observation.images.front") +
                         "\tskipped: " + front1 + " is missing"),
            std::string::npos)
      << dry.out;
  EXPECT_FALSE(std::filesystem::exists(dst));

  testing::RunResult r = testing::Run(
      {testing::MkpackPath(), "convert-lerobot", ds, dst, "--missing", "skip", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_lists_both(r);
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["episodes"], 5);
  EXPECT_EQ(summary["episode_videos"], 5);
  EXPECT_EQ(summary["skipped_episode_videos"], 5);
  EXPECT_EQ(summary["missing_sources"], 2);
  const json index = json::parse(testing::ReadFile(dst + "/video_index.json"));
  std::set<std::string> skipped, listed;
  for (const json& s : index["skipped"]) {
    skipped.insert(std::to_string(s["episode_index"].get<uint64_t>()) + " " +
                   s["camera"].get<std::string>() + " " + s["missing"].get<std::string>());
  }
  EXPECT_EQ(skipped, (std::set<std::string>{"0 observation.images.top " + top0,
                                            "1 observation.images.top " + top0,
                                            "2 observation.images.top " + top0,
                                            "3 observation.images.front " + front1,
                                            "4 observation.images.front " + front1}));
  for (const json& ep : index["episodes"]) {
    for (const auto& [cam, v] : ep["videos"].items()) {
      listed.insert(std::to_string(ep["episode_index"].get<uint64_t>()) + " " + cam);
    }
  }
  EXPECT_EQ(listed, (std::set<std::string>{"0 observation.images.front", "1 observation.images.front",
                                           "2 observation.images.front", "3 observation.images.top",
                                           "4 observation.images.top"}));
  testing::Mount mnt({dst}, MountDir(work / "mnt"));
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  ExpectEpisodesMatchOriginals(mnt.path(), {top0, front1});
  ExpectEpisodesJsonl(mnt.path() + "/meta/episodes.jsonl");
  EXPECT_EQ(testing::Sha256File(mnt.path() + "/v3/data/chunk-000/file-000.parquet"),
            testing::Sha256File(ds + "/data/chunk-000/file-000.parquet"));
  // Mounted as it is, the same partial dataset names both files too.
  testing::Mount partial({ds}, MountDir(work / "partial"));
  ASSERT_TRUE(partial.ok()) << partial.result().err;
  expect_lists_both(partial.result());
}

TEST_F(LeRobotMountTest, ConvertLeRobotWritesSelfContainedEpisodes) {
  TempDir work;
  const std::string dst = work / "episodes";
  testing::RunResult dry =
      testing::Run({testing::MkpackPath(), "convert-lerobot", dataset_, dst, "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find(V21Path(4, "observation.images.front")), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("\tdata\t" + V21DataPath(4) + "\trows "), std::string::npos) << dry.out;
  EXPECT_FALSE(std::filesystem::exists(dst));
  testing::RunResult r = testing::Run({testing::MkpackPath(), "convert-lerobot", dataset_, dst,
                                       "--max-pack-bytes", "24K"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Any zip tool reads the episodes; they decode like the originals.
  json index = json::parse(testing::ReadFile(dst + "/video_index.json"));
  ASSERT_EQ(index["episodes"].size(), manifest_["episodes"].size());
  TempDir out;
  std::set<std::string> used_shards;
  for (const json& ep : index["episodes"]) {
    const uint64_t e = ep["episode_index"].get<uint64_t>();
    ASSERT_EQ(ep["videos"].size(), 2u);
    std::string shard;
    for (const auto& [cam, v] : ep["videos"].items()) {
      const std::string ref = v["ref"];
      const size_t sep = ref.find("::");
      ASSERT_EQ(ref.rfind("zip://", 0), 0u) << ref;
      const std::string key = ref.substr(6, sep - 6);
      const std::string shard_rel = ref.substr(sep + 2);
      EXPECT_EQ(key, V21Path(e, cam));
      // Both cameras of an episode share a shard.
      if (shard.empty()) shard = shard_rel;
      EXPECT_EQ(shard_rel, shard);
      used_shards.insert(shard_rel);
      const std::string file = out / ("e" + std::to_string(e) + "_" + cam + ".mp4");
      testing::RunResult u = testing::Sh("unzip -p '" + work.path() + "/" + shard_rel + "' '" +
                                         key + "' > '" + file + "'");
      ASSERT_EQ(u.exit_code, 0) << u.err;
      const json& m = manifest_["episodes"][e];
      EXPECT_EQ(testing::FrameHashes(file), OriginalHashes(m["cameras"][cam]["original"]));
      EXPECT_EQ(v["frames"].get<int64_t>(), m["length"].get<int64_t>());
      EXPECT_EQ(v["from_ns"].get<int64_t>(), 0);
      EXPECT_EQ(v["to_ns"].get<int64_t>(),
                static_cast<int64_t>(std::llround(m["length"].get<double>() / 30.0 * 1e9)));
    }
  }
  EXPECT_GT(used_shards.size(), 1u) << "the shard limit should spread the episodes";
  // Mounted, the converted set serves the same episodes (and no second view of them), it is the
  // v2.1 dataset the view of the source shows (the same meta/ files, real members now, with the
  // same mtimes), and the dataset's tables came along unchanged under v3/ (without the
  // multi-episode MP4s).
  EXPECT_NE(r.err.find("without meta/episodes_stats.jsonl"), std::string::npos) << r.err;
  testing::Mount mnt({dst}, MountDir(work / "mnt"));
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  ExpectEpisodesMatchOriginals(mnt.path());
  ExpectEpisodesJsonl(mnt.path() + "/meta/episodes.jsonl");
  testing::Mount view({dataset_}, MountDir(work / "view"));
  ASSERT_TRUE(view.ok()) << view.result().err;
  for (const char* rel : {"meta/info.json", "meta/episodes.jsonl", "meta/tasks.jsonl"}) {
    EXPECT_EQ(testing::ReadFile(mnt.path() + "/" + rel), testing::ReadFile(view.path() + "/" + rel))
        << rel;
    struct stat a {}, b {};
    ASSERT_EQ(::stat((mnt.path() + "/" + rel).c_str(), &a), 0) << rel;
    ASSERT_EQ(::stat((view.path() + "/" + rel).c_str(), &b), 0) << rel;
    EXPECT_EQ(a.st_mtime, b.st_mtime) << rel;
  }
  EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/meta/episodes_stats.jsonl"));
  // The v2.1 data files are real members now, the mounted view's bytes and mtimes.
  ExpectV21DataMatchesSource(mnt.path());
  for (uint64_t e = 0; e < manifest_["episodes"].size(); ++e) {
    const std::string rel = V21DataPath(e);
    EXPECT_EQ(testing::Sha256File(mnt.path() + "/" + rel),
              testing::Sha256File(view.path() + "/" + rel))
        << rel;
    struct stat a {}, b {};
    ASSERT_EQ(::stat((mnt.path() + "/" + rel).c_str(), &a), 0) << rel;
    ASSERT_EQ(::stat((view.path() + "/" + rel).c_str(), &b), 0) << rel;
    EXPECT_EQ(a.st_mtime, b.st_mtime) << rel;
  }
  EXPECT_EQ(testing::Sha256File(mnt.path() + "/v3/data/chunk-000/file-000.parquet"),
            testing::Sha256File(dataset_ + "/data/chunk-000/file-000.parquet"));
  EXPECT_EQ(testing::Sha256File(mnt.path() + "/v3/meta/info.json"),
            testing::Sha256File(dataset_ + "/meta/info.json"));
  EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/v3/videos"));
  EXPECT_FALSE(std::filesystem::exists(mnt.path() + "/videos/observation.images.front"));
  // --layout v3: the v3 files in place and meta/episodes.jsonl, as the v3 view shows them.
  const std::string v3dst = work / "episodes-v3";
  testing::RunResult v3 =
      testing::Run({testing::MkpackPath(), "convert-lerobot", dataset_, v3dst, "--layout", "v3"});
  ASSERT_EQ(v3.exit_code, 0) << v3.err;
  testing::Mount v3mnt({v3dst}, MountDir(work / "mnt-v3"));
  ASSERT_TRUE(v3mnt.ok()) << v3mnt.result().err;
  ExpectEpisodesJsonl(v3mnt.path() + "/meta/episodes.jsonl");
  EXPECT_EQ(testing::Sha256File(v3mnt.path() + "/meta/info.json"),
            testing::Sha256File(dataset_ + "/meta/info.json"));
  EXPECT_EQ(testing::Sha256File(v3mnt.path() + "/data/chunk-000/file-000.parquet"),
            testing::Sha256File(dataset_ + "/data/chunk-000/file-000.parquet"));
  EXPECT_FALSE(std::filesystem::exists(v3mnt.path() + "/v3"));
  EXPECT_FALSE(std::filesystem::exists(v3mnt.path() + "/meta/tasks.jsonl"));
  // Converting into a directory that already holds shards is refused, nothing overwritten.
  testing::RunResult again = testing::Run({testing::MkpackPath(), "convert-lerobot", dataset_, dst});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds shards"), std::string::npos) << again.err;
}

// A v2.1 dataset (one MP4 per episode already) is packed unchanged: every file byte-identical,
// the episodes of both cameras sharing a shard, and no video_index.json (nothing was sliced).
TEST_F(LeRobotMountTest, ConvertV21DatasetPacksItUnchanged) {
  TempDir work;
  const std::string src = work / "v21";
  testing::WriteFile(src + "/meta/info.json",
                     "{\"codebase_version\": \"v2.1\", \"fps\": 30, \"chunks_size\": 1000, "
                     "\"total_episodes\": 5, \"data_path\": \"data/chunk-{episode_chunk:03d}/"
                     "episode_{episode_index:06d}.parquet\", \"video_path\": \"videos/chunk-"
                     "{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4\", "
                     "\"features\": {}}");
  std::string jsonl;
  for (const json& ep : manifest_["episodes"]) {
    const uint64_t e = ep["episode_index"].get<uint64_t>();
    jsonl += "{\"episode_index\":" + std::to_string(e) + ",\"tasks\":[],\"length\":" +
             std::to_string(ep["length"].get<int64_t>()) + "}\n";
    for (const auto& [cam, info] : ep["cameras"].items()) {
      testing::WriteFile(src + "/" + V21Path(e, cam), testing::ReadFile(info["original"]));
    }
  }
  testing::WriteFile(src + "/meta/episodes.jsonl", jsonl);
  const std::string dst = work / "pack";
  testing::RunResult r = testing::Run({testing::MkpackPath(), "convert-lerobot", src, dst,
                                       "--max-pack-bytes", "24K", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"source_version\": \"v2.1\""), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dst + "/video_index.json"));
  TempDir out;
  ASSERT_EQ(testing::Run({testing::MkpackPath(), "unpack", dst, out / "u"}).exit_code, 0);
  EXPECT_EQ(testing::Sh("diff -r '" + src + "' '" + out.path() + "/u'").exit_code, 0);
  // Both cameras of each episode in one shard.
  testing::RunResult ls = testing::Run({testing::MkpackPath(), "ls", "--long", dst});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  std::map<std::string, std::set<std::string>> shards_of_episode;
  std::istringstream lines(ls.out);
  std::string line;
  while (std::getline(lines, line)) {
    size_t at = line.find("episode_");
    if (at == std::string::npos) continue;
    for (const char* shard : {"pack-0000.zip", "pack-0001.zip", "pack-0002.zip", "pack-0003.zip",
                              "pack-0004.zip", "pack-0005.zip"}) {
      if (line.find(shard) != std::string::npos) {
        shards_of_episode[line.substr(at, 14)].insert(shard);
      }
    }
  }
  EXPECT_EQ(shards_of_episode.size(), manifest_["episodes"].size()) << ls.out;
  std::set<std::string> used;
  for (const auto& [ep, shards] : shards_of_episode) {
    EXPECT_EQ(shards.size(), 1u) << ep;
    used.insert(shards.begin(), shards.end());
  }
  EXPECT_GT(used.size(), 1u) << "the shard limit should spread the episodes: " << ls.out;
}

// The real metadata of a LeRobot v3 recording (4 episodes of 373, 374, 372, 373 frames, two
// cameras) with videos encoded the way LeRobot does (AV1 -g 2, each episode alone, joined with
// the concat demuxer and faststart).
TEST(LeRobotRealMetadata, EpisodesOfTheRecordingFixture) {
  if (!testing::FuseAvailable()) GTEST_SKIP() << "no /dev/fuse or fusermount3";
  if (!testing::HasCommand("ffmpeg")) GTEST_SKIP() << "no ffmpeg";
  TempDir tmp;
  const std::string ds = tmp / "ds";
  const std::string fixture = testing::FixturesDir() + "/lerobot-v3-record-test";
  ASSERT_EQ(testing::Sh("cp -r '" + fixture + "' '" + ds + "' && chmod -R u+w '" + ds + "'")
                .exit_code, 0);
  const int lengths[] = {373, 374, 372, 373};
  const std::vector<std::string> cams = {"observation.images.front", "observation.images.top"};
  testing::EpisodeSpec spec;
  spec.video_args = "-c:v libsvtav1 -g 2 -preset 12 -crf 40 -s 64x64 -pix_fmt yuv420p";
  std::map<std::string, std::vector<std::string>> originals;
  for (size_t c = 0; c < cams.size(); ++c) {
    std::vector<std::string> parts;
    int start = 0;
    for (int e = 0; e < 4; ++e) {
      const std::string part = tmp / (cams[c] + "_" + std::to_string(e) + ".mp4");
      ASSERT_TRUE(testing::EncodeEpisode(part, lengths[e], start + 500 * static_cast<int>(c), spec));
      start += lengths[e];
      parts.push_back(part);
    }
    const std::string dir = ds + "/videos/" + cams[c] + "/chunk-000";
    std::filesystem::create_directories(dir);
    ASSERT_TRUE(testing::JoinEpisodes(parts, dir + "/file-000.mp4", true, tmp / "list.txt"));
    originals[cams[c]] = parts;
  }
  testing::Mount mnt({ds}, MountDir(tmp / "mnt"));
  ASSERT_TRUE(mnt.ok()) << mnt.result().err;
  for (const std::string& cam : cams) {
    for (int e = 0; e < 4; ++e) {
      const std::string path = mnt.path() + "/" + V21Path(static_cast<uint64_t>(e), cam);
      SCOPED_TRACE(path);
      const std::vector<std::string> got = testing::FrameHashes(path);
      EXPECT_EQ(got.size(), static_cast<size_t>(lengths[e]));
      EXPECT_EQ(got, testing::FrameHashes(originals[cam][e]));
    }
  }
  std::string jsonl = testing::ReadFile(mnt.path() + "/meta/episodes.jsonl");
  EXPECT_NE(jsonl.find("{\"episode_index\": 3, "), std::string::npos) << jsonl;
  EXPECT_NE(jsonl.find("\"length\": 374}"), std::string::npos) << jsonl;
  const std::string info = testing::ReadFile(mnt.path() + "/meta/info.json");
  EXPECT_NE(info.find("\"codebase_version\": \"v2.1\""), std::string::npos) << info;
}

}  // namespace
}  // namespace packfs
