// Tests of LeRobot metadata over a real v3.0 dataset's meta/ (info.json and the episodes table
// written by LeRobot): every episode's length, tasks and per-camera video placement; path
// templates; v2.1 names and episodes.jsonl lines; and the errors for bad info.json and tables.
// Also the plan of the v2.1 view (no FUSE) of that metadata without its videos: every episode video
// is planned as missing, not an error.
#include "core/lerobot/lerobot_meta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <string>
#include <vector>

#include "core/lerobot/lerobot_view.h"
#include "core/read/loose_dir.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

std::string Fixture(const std::string& rel) {
  return testing::FixturesDir() + "/lerobot-v3-record-test/" + rel;
}
const char* const kEpisodes = "meta/episodes/chunk-000/file-000.parquet";

LeRobotInfo Info() {
  auto r = ParseLeRobotInfo(testing::ReadFile(Fixture("meta/info.json")), "meta/info.json");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : LeRobotInfo{};
}

TEST(LeRobotMetaTest, InfoOfRealDataset) {
  LeRobotInfo info = Info();
  EXPECT_EQ(info.codebase_version, "v3.0");
  EXPECT_TRUE(IsLeRobotV3(info));
  EXPECT_EQ(info.fps, 30);
  EXPECT_EQ(info.chunks_size, 1000u);
  EXPECT_EQ(info.total_episodes, 4u);
  EXPECT_EQ(info.data_path, "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet");
  EXPECT_EQ(info.video_path, "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4");
  EXPECT_EQ(info.video_keys,
            (std::vector<std::string>{"observation.images.front", "observation.images.top"}));
}

TEST(LeRobotMetaTest, EpisodesOfRealDataset) {
  LeRobotInfo info = Info();
  MemoryShardSource src(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto r = ReadLeRobotEpisodes({&src}, info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& eps = *r;
  ASSERT_EQ(eps.size(), 4u);
  const uint64_t lengths[] = {373, 374, 372, 373};
  // The exact float64 timestamps LeRobot wrote (to of one episode = from of the next).
  const double from[] = {0.0, 12.433333333333334, 24.9, 37.3};
  const double to[] = {12.433333333333334, 24.9, 37.3, 49.733333333333334};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("episode " + std::to_string(i));
    EXPECT_EQ(eps[i].index, i);
    EXPECT_EQ(eps[i].length, lengths[i]);
    EXPECT_EQ(eps[i].tasks, std::vector<std::string>{"Pick the orange cube and place it in the box"});
    ASSERT_EQ(eps[i].videos.size(), 2u);
    for (size_t v = 0; v < 2; ++v) {
      const EpisodeVideo& ev = eps[i].videos[v];
      EXPECT_EQ(ev.video_key, info.video_keys[v]);
      EXPECT_EQ(ev.chunk_index, 0u);
      EXPECT_EQ(ev.file_index, 0u);
      EXPECT_EQ(ev.from_timestamp, from[i]);
      EXPECT_EQ(ev.to_timestamp, to[i]);
      if (i > 0) {
        EXPECT_EQ(ev.from_timestamp, eps[i - 1].videos[v].to_timestamp);
      }
      // Frames covered by the span equal the episode length.
      EXPECT_EQ(std::llround((ev.to_timestamp - ev.from_timestamp) * info.fps),
                static_cast<long long>(lengths[i]));
      auto path = LeRobotVideoPath(info, ev);
      ASSERT_TRUE(path.ok()) << path.status().ToString();
      EXPECT_EQ(*path, "videos/" + info.video_keys[v] + "/chunk-000/file-000.mp4");
    }
  }
  EXPECT_EQ(eps[0].videos[0].from_timestamp, 0.0);
  EXPECT_EQ(DescribeEpisodeTimestampMismatch(eps, info.fps), "");
  EXPECT_EQ(LeRobotEpisodeJsonLine(eps[1]),
            "{\"episode_index\":1,\"tasks\":[\"Pick the orange cube and place it in the box\"],"
            "\"length\":374}");
}

// Spans of (length - 1) / fps, as a real 50-episode dataset has them: one line saying how many
// and by how much; a range when the difference varies; nothing within a quarter frame.
TEST(LeRobotMetaTest, TimestampsThatDisagreeWithLengthsAreDescribedOnce) {
  auto episode = [](uint64_t index, uint64_t length, double from, double span_frames) {
    Episode e;
    e.index = index;
    e.length = length;
    for (const char* key : {"cam.a", "cam.b"}) {
      e.videos.push_back(EpisodeVideo{key, 0, 0, from, from + span_frames / 30.0});
    }
    return e;
  };
  std::vector<Episode> eps = {episode(0, 300, 0, 299), episode(1, 200, 10, 199),
                              episode(2, 100, 20, 99)};
  EXPECT_EQ(DescribeEpisodeTimestampMismatch(eps, 30),
            "meta/episodes: to_timestamp - from_timestamp differs from length / fps in 3 of 3 "
            "episodes, by -1.00 frames (-33.3 ms); each episode video shows `length` frames from "
            "its from_timestamp");
  eps[1] = episode(1, 200, 10, 202);
  eps.push_back(episode(3, 50, 30, 50.2));
  const std::string ranged = DescribeEpisodeTimestampMismatch(eps, 30);
  EXPECT_NE(ranged.find(" 3 of 4 episodes, by from -1.00 frames (-33.3 ms) to +2.00 frames "
                        "(+66.7 ms);"),
            std::string::npos)
      << ranged;
  std::vector<Episode> fine = {episode(0, 300, 0, 300.2), episode(1, 10, 1, 9.8)};
  EXPECT_EQ(DescribeEpisodeTimestampMismatch(fine, 30), "");
  EXPECT_EQ(DescribeEpisodeTimestampMismatch(eps, 0), "");
}

TEST(LeRobotMetaTest, DuplicateEpisodesAcrossFiles) {
  LeRobotInfo info = Info();
  MemoryShardSource a("meta/episodes/chunk-000/file-000.parquet",
                      testing::ReadBytes(Fixture(kEpisodes)));
  MemoryShardSource b("meta/episodes/chunk-000/file-001.parquet",
                      testing::ReadBytes(Fixture(kEpisodes)));
  auto r = ReadLeRobotEpisodes({&a, &b}, info);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("file-001.parquet"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("repeats episode 0"), std::string::npos);
}

TEST(LeRobotMetaTest, MissingVideoColumnNamesFile) {
  LeRobotInfo info = Info();
  info.video_keys.push_back("observation.images.wrist");
  MemoryShardSource src(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto r = ReadLeRobotEpisodes({&src}, info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find(kEpisodes), std::string::npos);
  EXPECT_NE(r.status().message().find("videos/observation.images.wrist/chunk_index"),
            std::string::npos);
}

TEST(LeRobotMetaTest, DataFileIsNotAnEpisodesTable) {
  LeRobotInfo info = Info();
  const std::string data = "data/chunk-000/file-000.parquet";
  MemoryShardSource src(data, testing::ReadBytes(Fixture(data)));
  auto r = ReadLeRobotEpisodes({&src}, info);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(data), std::string::npos);
}

TEST(LeRobotMetaTest, Templates) {
  std::map<std::string, TemplateValue> f = {{"chunk_index", uint64_t{7}},
                                            {"file_index", uint64_t{12345}},
                                            {"video_key", std::string("cam")}};
  EXPECT_EQ(*FormatLeRobotTemplate("a/{video_key}/c-{chunk_index:03d}/f-{file_index:03d}", f),
            "a/cam/c-007/f-12345");
  EXPECT_EQ(*FormatLeRobotTemplate("{chunk_index}{chunk_index:d}{chunk_index:5d}{{x}}", f),
            "7700007{x}");
  for (const char* bad : {"{nope}", "{chunk_index", "x}", "{video_key:03d}", "{chunk_index:03x}",
                          "{chunk_index:abc}"}) {
    auto r = FormatLeRobotTemplate(bad, f);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
  auto unknown = FormatLeRobotTemplate("{episode_index:06d}", f);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown field 'episode_index'"), std::string::npos);

  LeRobotInfo info = Info();
  EXPECT_EQ(LeRobotV21VideoPath(info, 3, "observation.images.top"),
            "videos/chunk-000/observation.images.top/episode_000003.mp4");
  EXPECT_EQ(LeRobotV21VideoPath(info, 2345, "cam"), "videos/chunk-002/cam/episode_002345.mp4");
}

TEST(LeRobotMetaTest, EpisodeJsonLine) {
  Episode e;
  e.index = 0;
  e.length = 373;
  e.tasks = {"Pick the \"cube\"", "ünïcode"};
  EXPECT_EQ(LeRobotEpisodeJsonLine(e),
            "{\"episode_index\":0,\"tasks\":[\"Pick the \\\"cube\\\"\",\"ünïcode\"],\"length\":373}");
  e.tasks = {std::string("bad\xff")};  // invalid UTF-8 must not throw
  EXPECT_NE(LeRobotEpisodeJsonLine(e).find("\"length\":373"), std::string::npos);
}

TEST(LeRobotMetaTest, BadInfoJson) {
  const std::string good = testing::ReadFile(Fixture("meta/info.json"));
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto r = ParseLeRobotInfo(text, "ds/meta/info.json");
    ASSERT_FALSE(r.ok()) << text.substr(0, 80);
    EXPECT_NE(r.status().message().find("ds/meta/info.json"), std::string::npos);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_error("{not json", "not valid JSON");
  expect_error("[1,2]", "not a JSON object");
  expect_error(good.substr(0, good.size() / 2), "not valid JSON");
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return s.replace(pos, from.size(), to);
  };
  expect_error(replace("\"fps\": 30", "\"fps\": -1"), "fps");
  expect_error(replace("\"chunks_size\": 1000", "\"chunks_size\": \"many\""), "chunks_size");
  expect_error(replace("\"codebase_version\": \"v3.0\"", "\"codebase\": 3"), "codebase_version");
  expect_error(replace("{file_index:03d}.mp4", "{episode:03d}.mp4"), "unknown field 'episode'");
  // Camera names that would escape or split the tree.
  expect_error(replace("\"observation.images.front\": {", "\"../../etc\": {"),
               "not usable as a directory name");
  expect_error(replace("\"observation.images.front\": {", "\"a/b\": {"),
               "not usable as a directory name");
  expect_error(replace("\"observation.images.front\": {", "\"..\": {"),
               "not usable as a directory name");
  auto v21 = ParseLeRobotInfo(replace("\"v3.0\"", "\"v2.1\""), "info.json");
  // A v2.1 info with v3 templates is rejected: chunk_index is not a v2.1 field.
  ASSERT_FALSE(v21.ok());
  EXPECT_NE(v21.status().message().find("chunk_index"), std::string::npos);
}

// The fixture holds meta/ and data/ but no videos: the plan shows the episodes and lists both
// cameras' source MP4s as missing, with every episode each holds, instead of failing.
TEST(LeRobotViewTest, PlanOfDatasetWithoutItsVideosListsEveryMissingSource) {
  auto set = OpenLooseDirectory(testing::FixturesDir() + "/lerobot-v3-record-test", "");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  auto plan = PlanLeRobotView(**set, Info(), LeRobotViewOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->episodes.size(), 4u);
  EXPECT_TRUE(plan->videos.empty());
  ASSERT_EQ(plan->missing.size(), 2u);
  const char* const cams[] = {"observation.images.front", "observation.images.top"};
  for (size_t c = 0; c < 2; ++c) {
    const MissingLeRobotSource& m = plan->missing[c];
    const std::string key = "videos/" + std::string(cams[c]) + "/chunk-000/file-000.mp4";
    EXPECT_EQ(m.source_key, key);
    ASSERT_EQ(m.videos.size(), 4u);
    for (uint64_t e = 0; e < 4; ++e) {
      EXPECT_EQ(m.videos[e].episode, e);
      EXPECT_EQ(m.videos[e].video_key, cams[c]);
      EXPECT_EQ(m.videos[e].source_key, key);
      EXPECT_EQ(m.videos[e].key, LeRobotV21VideoPath(plan->info, e, cams[c]));
    }
    EXPECT_EQ(DescribeMissingSource(m), key + " (episodes 0-3 of camera " + cams[c] + ")");
  }
  // Every episode stays in meta/episodes.jsonl.
  EXPECT_EQ(std::count(plan->episodes_jsonl.begin(), plan->episodes_jsonl.end(), '\n'), 4);
}

TEST(LeRobotViewTest, DescribeMissingSourceShowsEpisodeRanges) {
  MissingLeRobotSource m;
  m.source_key = "videos/cam/chunk-000/file-007.mp4";
  for (uint64_t e : {9, 3, 4, 5, 7, 12, 11}) {
    EpisodeVideoFile v;
    v.episode = e;
    v.video_key = e == 12 ? "other" : "cam";
    m.videos.push_back(v);
  }
  EXPECT_EQ(DescribeMissingSource(m),
            "videos/cam/chunk-000/file-007.mp4 (episodes 3-5, 7, 9, 11 of camera cam; episode 12 "
            "of camera other)");
}

}  // namespace
}  // namespace packfs
