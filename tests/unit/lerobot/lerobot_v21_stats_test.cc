// Tests of v2.1 episodes_stats.jsonl generated from the real v3 fixture's episodes table: its
// camera stats (lists nested three deep) are refused for now; without the cameras, every line
// has v2.1's layout, feature order, stat order and number types, with the values that follow
// from the episodes' lengths; quantiles and string features are left out.
#include "core/lerobot/lerobot_v21_stats.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace packfs {
namespace {

std::string Fixture(const std::string& rel) {
  return testing::FixturesDir() + "/lerobot-v3-record-test/" + rel;
}
const char* const kEpisodes = "meta/episodes/chunk-000/file-000.parquet";

std::string InfoWithoutCameras() {
  auto info = nlohmann::ordered_json::parse(testing::ReadFile(Fixture("meta/info.json")));
  info["features"].erase("observation.images.front");
  info["features"].erase("observation.images.top");
  // v2.1 keeps no stats for strings, so no stats/<key>/* columns are looked for.
  info["features"]["language_instruction"] = {{"dtype", "string"}, {"shape", {1}}};
  return info.dump();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    out.push_back(text.substr(start, nl - start));
  }
  EXPECT_EQ(start, text.size()) << "text after the last newline";
  return out;
}

TEST(LeRobotV21StatsTest, CameraStatsKeepTheirNestedShape) {
  MemoryShardSource src(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto r = LeRobotV21EpisodesStatsJsonl({&src}, testing::ReadFile(Fixture("meta/info.json")),
                                        "meta/info.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto lines = Lines(*r);
  ASSERT_EQ(lines.size(), 4u);
  // Episode 0's front camera as hyparquet reads the v3 table, in v2.1's layout.
  EXPECT_NE(lines[0].find(
                "\"observation.images.front\": {\"min\": [[[0.023529411764705882]], "
                "[[0.043137254901960784]], [[0.10588235294117647]]], \"max\": [[[1.0]], [[1.0]], "
                "[[1.0]]], \"mean\": [[[0.69125710375817]], [[0.6997046895424837]], "
                "[[0.6853175347222222]]], \"std\": [[[0.0]], [[0.0]], [[0.0]]], \"count\": "
                "[100]}, \"observation.images.top\": {\"min\": [[["),
            std::string::npos)
      << lines[0];
  for (const auto& line : lines) {
    EXPECT_EQ(line.find("q01"), std::string::npos);
    // Features in info.json order: the cameras between observation.state and timestamp.
    EXPECT_LT(line.find("\"observation.state\""), line.find("\"observation.images.front\""));
    EXPECT_LT(line.find("\"observation.images.top\""), line.find("\"timestamp\""));
  }
}

TEST(LeRobotV21StatsTest, RealDatasetWithoutCameras) {
  MemoryShardSource src(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto r = LeRobotV21EpisodesStatsJsonl({&src}, InfoWithoutCameras(), "meta/info.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<std::string> lines = Lines(*r);
  ASSERT_EQ(lines.size(), 4u);
  const uint64_t lengths[] = {373, 374, 372, 373};
  uint64_t first_index = 0;
  for (uint64_t ep = 0; ep < 4; ++ep) {
    SCOPED_TRACE("episode " + std::to_string(ep));
    const std::string& line = lines[ep];
    const std::string e = std::to_string(ep), n = std::to_string(lengths[ep]);
    EXPECT_EQ(line.rfind("{\"episode_index\": " + e + ", \"stats\": {\"action\": {\"min\": [", 0),
              0u)
        << line;
    EXPECT_EQ(line.substr(line.size() - 3), "}}}");
    // Features in info order, each with min, max, mean, std, count and nothing else.
    size_t at = 0;
    for (const char* key : {"action", "observation.state", "timestamp", "frame_index",
                            "episode_index", "index", "task_index"}) {
      const size_t found = line.find("\"" + std::string(key) + "\": {\"min\": [", at);
      EXPECT_NE(found, std::string::npos) << key;
      if (found == std::string::npos) continue;
      at = found;
      const size_t end = line.find('}', found);
      const std::string feature = line.substr(found, end - found);
      size_t pos = 0;
      for (const std::string& stat : {std::string("\"min\": ["), std::string("], \"max\": ["),
                                      std::string("], \"mean\": ["), std::string("], \"std\": ["),
                                      "], \"count\": [" + n + "]"}) {
        pos = feature.find(stat, pos);
        EXPECT_NE(pos, std::string::npos) << key << " " << stat << " in " << feature;
      }
    }
    EXPECT_EQ(line.find("q01"), std::string::npos);
    EXPECT_EQ(line.find("language_instruction"), std::string::npos);
    EXPECT_EQ(line.find("observation.images"), std::string::npos);
    // Integer features: min/max ints, mean/std floats; values from the episode lengths.
    EXPECT_NE(line.find("\"frame_index\": {\"min\": [0], \"max\": [" +
                        std::to_string(lengths[ep] - 1) + "], \"mean\": ["),
              std::string::npos);
    EXPECT_NE(line.find("\"episode_index\": {\"min\": [" + e + "], \"max\": [" + e +
                        "], \"mean\": [" + e + ".0], \"std\": [0.0], \"count\": [" + n + "]}"),
              std::string::npos);
    EXPECT_NE(line.find("\"index\": {\"min\": [" + std::to_string(first_index) + "], \"max\": [" +
                        std::to_string(first_index + lengths[ep] - 1) + "], \"mean\": ["),
              std::string::npos);
    EXPECT_NE(line.find("\"task_index\": {\"min\": [0], \"max\": [0], \"mean\": [0.0], \"std\": "
                        "[0.0], \"count\": [" + n + "]}}}"),
              std::string::npos);
    // timestamp stats are float64 in v3 as in v2.1: a float, not an int.
    EXPECT_NE(line.find("\"timestamp\": {\"min\": [0.0], \"max\": ["), std::string::npos);
    first_index += lengths[ep];
  }
}

TEST(LeRobotV21StatsTest, Errors) {
  MemoryShardSource src(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto dup = LeRobotV21EpisodesStatsJsonl({&src, &src}, InfoWithoutCameras(), "meta/info.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), Code::kCorruption);
  EXPECT_NE(dup.status().message().find("repeats episode 0"), std::string::npos);

  auto bad_info = LeRobotV21EpisodesStatsJsonl({&src}, R"({"fps": 30})", "ds/meta/info.json");
  ASSERT_FALSE(bad_info.ok());
  EXPECT_NE(bad_info.status().message().find("ds/meta/info.json"), std::string::npos);

  auto missing = LeRobotV21EpisodesStatsJsonl(
      {&src}, R"({"features": {"nope": {"dtype": "float32", "shape": [1]}}})", "info.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(kEpisodes), std::string::npos)
      << missing.status().message();

  auto none = LeRobotV21EpisodesStatsJsonl({}, InfoWithoutCameras(), "info.json");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, "");
}

}  // namespace
}  // namespace packfs
