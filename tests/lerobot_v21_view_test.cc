// The v2.1 layout of a LeRobot v3 dataset without FUSE: AddLeRobotV21Files generates the v2.1
// meta/ files exactly as the core/lerobot_v21 generators make them from the real v3 fixture (with
// the mtimes of the files they come from), leaves episodes_stats.jsonl out with a note while
// camera stats are not converted, and includes it without cameras; the view set serves those
// bytes; OpenPrefixedSet shows every dataset file under v3/ unchanged.
#include "core/lerobot_v21_view.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/lerobot_v21.h"
#include "core/lerobot_v21_stats.h"
#include "core/loose_dir.h"
#include "core/prefixed_set.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

const char* const kEpisodes = "meta/episodes/chunk-000/file-000.parquet";

// A copy of the real v3 fixture (meta/ and data/, no videos) at `dir`; without its cameras when
// `cameras` is false (their stats are what cannot be converted yet).
void CopyFixture(const std::string& dir, bool cameras) {
  const std::string fixture = testing::FixturesDir() + "/lerobot-v3-record-test";
  ASSERT_EQ(testing::Sh("cp -rp '" + fixture + "' '" + dir + "' && chmod -R u+w '" + dir + "'")
                .exit_code, 0);
  if (cameras) return;
  auto info = nlohmann::ordered_json::parse(testing::ReadFile(dir + "/meta/info.json"));
  info["features"].erase("observation.images.front");
  info["features"].erase("observation.images.top");
  info["features"]["language_instruction"] = {{"dtype", "string"}, {"shape", {1}}};
  testing::WriteFile(dir + "/meta/info.json", info.dump(4));
}

int64_t MtimeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mtime;
}

// The bytes of `key` in `set`, or "<absent>".
std::string ReadKey(const PackSet& set, const std::string& key) {
  Result<std::optional<Node>> node = set.catalog().Find(key);
  if (!node.ok() || !*node || (*node)->is_dir()) return "<absent>";
  std::string out((*node)->size, '\0');
  std::span<uint8_t> buf(reinterpret_cast<uint8_t*>(out.data()), out.size());
  Result<size_t> got = set.Read(**node, 0, buf);
  EXPECT_TRUE(got.ok()) << key << ": " << got.status().ToString();
  if (got.ok()) out.resize(*got);
  return out;
}

struct Opened {
  std::shared_ptr<const PackSet> dataset;
  LeRobotPlan plan;
};

Opened OpenAndPlan(const std::string& dir) {
  Opened o;
  auto set = OpenLooseDirectory(dir, "");
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  if (!set.ok()) return o;
  o.dataset = std::move(set).value();
  auto info = ReadLeRobotInfo(*o.dataset);
  EXPECT_TRUE(info.ok() && info->has_value());
  if (!info.ok() || !info->has_value()) return o;
  auto plan = PlanLeRobotView(*o.dataset, **info, LeRobotViewOptions{});
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (plan.ok()) o.plan = std::move(plan).value();
  return o;
}

TEST(LeRobotV21ViewTest, MetaFilesAreTheGeneratorsOutputWithStableMtimes) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/true);
  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  ASSERT_TRUE(AddLeRobotV21Files(*o.dataset, &o.plan).ok());
  EXPECT_EQ(o.plan.layout, LeRobotLayout::kV21);
  EXPECT_TRUE(o.plan.v21_data.empty());

  auto tasks_src = FileShardSource::Open(ds + "/meta/tasks.parquet", "tasks");
  ASSERT_TRUE(tasks_src.ok());
  auto tasks = ReadLeRobotTasks(**tasks_src);
  ASSERT_TRUE(tasks.ok());
  auto info = LeRobotV21InfoJson(testing::ReadFile(ds + "/meta/info.json"),
                                 LeRobotV21TotalsOf(o.plan.episodes, tasks->size()), "info");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(o.plan.v21_meta.size(), 3u);
  const GeneratedFile& i = o.plan.v21_meta[0];
  const GeneratedFile& e = o.plan.v21_meta[1];
  const GeneratedFile& t = o.plan.v21_meta[2];
  EXPECT_EQ(i.key, "meta/info.json");
  EXPECT_EQ(i.bytes, *info);
  EXPECT_EQ(i.mtime, MtimeOf(ds + "/meta/info.json"));
  EXPECT_EQ(e.key, "meta/episodes.jsonl");
  EXPECT_EQ(e.bytes, LeRobotV21EpisodesJsonl(o.plan.episodes));
  EXPECT_EQ(e.mtime, MtimeOf(ds + "/" + kEpisodes));
  EXPECT_EQ(t.key, "meta/tasks.jsonl");
  EXPECT_EQ(t.bytes, LeRobotV21TasksJsonl(*tasks));
  EXPECT_EQ(t.mtime, MtimeOf(ds + "/meta/tasks.parquet"));
  // Camera stats: left out, and the note says which file and why.
  ASSERT_EQ(o.plan.v21_notes.size(), 1u);
  EXPECT_NE(o.plan.v21_notes[0].find("without meta/episodes_stats.jsonl"), std::string::npos);
  EXPECT_NE(o.plan.v21_notes[0].find("observation.images"), std::string::npos)
      << o.plan.v21_notes[0];

  // The view serves these bytes and reports the note with its warnings.
  std::vector<GeneratedFile> want = o.plan.v21_meta;
  auto view = OpenLeRobotView(*o.dataset, std::move(o.plan), LeRobotViewOptions{}, o.dataset);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  for (const GeneratedFile& g : want) EXPECT_EQ(ReadKey(**view, g.key), g.bytes) << g.key;
  EXPECT_EQ(ReadKey(**view, "meta/episodes_stats.jsonl"), "<absent>");
  bool noted = false;
  for (const std::string& w : (*view)->warnings()) {
    noted = noted || w.find("episodes_stats.jsonl") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

TEST(LeRobotV21ViewTest, EpisodesStatsWithoutCameras) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/false);
  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  ASSERT_TRUE(AddLeRobotV21Files(*o.dataset, &o.plan).ok());
  EXPECT_TRUE(o.plan.v21_notes.empty());
  ASSERT_EQ(o.plan.v21_meta.size(), 4u);
  const GeneratedFile& s = o.plan.v21_meta[3];
  EXPECT_EQ(s.key, "meta/episodes_stats.jsonl");
  auto table = FileShardSource::Open(ds + "/" + kEpisodes, kEpisodes);
  ASSERT_TRUE(table.ok());
  auto want = LeRobotV21EpisodesStatsJsonl(
      {table->get()}, testing::ReadFile(ds + "/meta/info.json"), "info");
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(s.bytes, *want);
  EXPECT_EQ(s.mtime, MtimeOf(ds + "/" + kEpisodes));
  EXPECT_EQ(std::count(s.bytes.begin(), s.bytes.end(), '\n'), 4);
}

TEST(LeRobotV21ViewTest, MissingTasksTableIsAnErrorNamingIt) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/true);
  ASSERT_EQ(::unlink((ds + "/meta/tasks.parquet").c_str()), 0);
  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  Status st = AddLeRobotV21Files(*o.dataset, &o.plan);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("meta/tasks.parquet is missing"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(o.plan.layout, LeRobotLayout::kV3);
  EXPECT_TRUE(o.plan.v21_meta.empty());
}

TEST(LeRobotV21ViewTest, PrefixedSetShowsEveryFileUnderThePrefix) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/true);
  auto set = OpenLooseDirectory(ds, "");
  ASSERT_TRUE(set.ok());
  std::shared_ptr<const PackSet> dataset = std::move(set).value();
  auto v3 = OpenPrefixedSet(dataset, "v3/");
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(ds)) {
    if (e.is_directory()) continue;
    const std::string rel = std::filesystem::relative(e.path(), ds).string();
    EXPECT_EQ(ReadKey(**v3, "v3/" + rel), testing::ReadFile(e.path().string())) << rel;
    EXPECT_EQ(ReadKey(**v3, rel), "<absent>") << rel;
    ++files;
  }
  EXPECT_EQ((*v3)->catalog().totals().files, files);
  for (const char* bad : {"", "v3", "/v3/", "../v3/", "/"}) {
    EXPECT_FALSE(OpenPrefixedSet(dataset, bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace packfs
