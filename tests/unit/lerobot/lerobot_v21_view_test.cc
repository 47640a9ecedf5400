// The v2.1 layout of a LeRobot v3 dataset without FUSE: AddLeRobotV21Files generates the v2.1
// meta/ files exactly as the core/lerobot_v21 generators make them from the real v3 fixture (with
// the mtimes of the files they come from), episodes_stats.jsonl included with cameras and
// without; the view set serves those bytes; OpenPrefixedSet shows every dataset file under v3/
// unchanged. The v2.1 data files are planned from the data files' footers (one per episode at
// the v2.1 path, its rows and size, the source's mtime; across several data files; a string
// feature sized by a build) and served as LeRobotV21EpisodeParquet builds them; a feature the
// writer does not support leaves data/ out with a note; a source that changed after planning is
// an error naming the file, never other bytes.
#include "core/lerobot/lerobot_v21_view.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/lerobot/lerobot_v21.h"
#include "core/lerobot/lerobot_v21_data.h"
#include "core/lerobot/lerobot_v21_stats.h"
#include "core/read/loose_dir.h"
#include "core/read/prefixed_set.h"
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
  EXPECT_EQ(o.plan.v21_data.size(), 4u);

  auto tasks_src = FileShardSource::Open(ds + "/meta/tasks.parquet", "tasks");
  ASSERT_TRUE(tasks_src.ok());
  auto tasks = ReadLeRobotTasks(**tasks_src);
  ASSERT_TRUE(tasks.ok());
  auto info = LeRobotV21InfoJson(testing::ReadFile(ds + "/meta/info.json"),
                                 LeRobotV21TotalsOf(o.plan.episodes, tasks->size()), "info");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(o.plan.v21_meta.size(), 4u);
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
  // Camera stats are converted too (nested (3,1,1) as v3 stores them): nothing is left out.
  EXPECT_EQ(o.plan.v21_meta[3].key, "meta/episodes_stats.jsonl");
  EXPECT_TRUE(o.plan.v21_notes.empty()) << o.plan.v21_notes[0];

  // The view serves these bytes.
  std::vector<GeneratedFile> want = o.plan.v21_meta;
  auto view = OpenLeRobotView(*o.dataset, std::move(o.plan), LeRobotViewOptions{}, o.dataset);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  for (const GeneratedFile& g : want) EXPECT_EQ(ReadKey(**view, g.key), g.bytes) << g.key;
}

TEST(LeRobotV21ViewTest, EpisodesStatsWithoutCameras) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/false);
  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  ASSERT_TRUE(AddLeRobotV21Files(*o.dataset, &o.plan).ok());
  // The string feature the copy adds is not in the data file: data/ is left out, with a note.
  ASSERT_EQ(o.plan.v21_notes.size(), 1u);
  EXPECT_NE(o.plan.v21_notes[0].find("without data/"), std::string::npos) << o.plan.v21_notes[0];
  EXPECT_NE(o.plan.v21_notes[0].find("language_instruction"), std::string::npos)
      << o.plan.v21_notes[0];
  EXPECT_TRUE(o.plan.v21_data.empty());
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

TEST(LeRobotV21ViewTest, DataFilesArePlannedFromFootersAndServedAsBuilt) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/true);
  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  ASSERT_TRUE(AddLeRobotV21Files(*o.dataset, &o.plan).ok());
  const std::string source = "data/chunk-000/file-000.parquet";
  ASSERT_EQ(o.plan.v21_data.size(), o.plan.episodes.size());
  ASSERT_NE(o.plan.v21_data_schema, nullptr);
  auto schema = LeRobotV21DataSchemaFromInfo(testing::ReadFile(ds + "/meta/info.json"), "info");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  auto src = FileShardSource::Open(ds + "/" + source, source);
  ASSERT_TRUE(src.ok());
  uint64_t row = 0;
  std::vector<std::vector<uint8_t>> want;
  for (size_t e = 0; e < o.plan.v21_data.size(); ++e) {
    const V21EpisodeDataFile& d = o.plan.v21_data[e];
    char key[64];
    std::snprintf(key, sizeof key, "data/chunk-000/episode_%06zu.parquet", e);
    EXPECT_EQ(d.key, key);
    EXPECT_EQ(d.episode, e);
    EXPECT_EQ(d.source_key, source);
    EXPECT_EQ(d.first_row, row);
    EXPECT_EQ(d.count, o.plan.episodes[e].length);
    EXPECT_EQ(d.mtime, MtimeOf(ds + "/" + source));
    auto bytes = LeRobotV21EpisodeParquet(*schema, **src, d.first_row, d.count,
                                          static_cast<int64_t>(e));
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_EQ(d.size, bytes->size());
    want.push_back(std::move(bytes).value());
    row += d.count;
  }
  EXPECT_EQ(row, 1492u);  // the fixture's total_frames

  // Served as built, from a small cache (one file fits) and without it; the set lists them.
  std::vector<V21EpisodeDataFile> files = o.plan.v21_data;
  LeRobotViewOptions opts;
  opts.data_cache_bytes = want[0].size() + 1;
  auto view = OpenLeRobotView(*o.dataset, std::move(o.plan), opts, o.dataset);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t e = 0; e < files.size(); ++e) {
      const std::string got = ReadKey(**view, files[e].key);
      EXPECT_EQ(got, std::string(want[e].begin(), want[e].end())) << files[e].key;
    }
  }
  EXPECT_EQ(ReadKey(**view, "data/chunk-000/file-000.parquet"), "<absent>");

  // A source that no longer gives the planned size is an error naming the file (EIO), not bytes.
  files[1].size += 1;
  EpisodeDataOpener opener(*o.dataset, std::make_shared<const LeRobotV21DataSchema>(*schema),
                           0);
  Result<ShardLease> lease = opener.Open(files[1]);
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().err(), EIO);
  EXPECT_NE(lease.status().message().find(files[1].key), std::string::npos)
      << lease.status().ToString();
  EXPECT_TRUE(opener.Open(files[0]).ok());
}

std::string ParquetMjs() {
  return std::string(PACKFS_SOURCE_DIR) + "/scripts/lerobot-parquet/parquet.mjs";
}

// node and the helper's node_modules (installed with npm ci when npm is there).
bool NodeReady() {
  if (!testing::HasCommand("node")) return false;
  const std::string dir = std::string(PACKFS_SOURCE_DIR) + "/scripts/lerobot-parquet";
  if (testing::Sh("test -d '" + dir + "/node_modules'").exit_code == 0) return true;
  if (!testing::HasCommand("npm")) return false;
  return testing::Sh("npm ci --silent --no-audit --no-fund --prefix '" + dir + "'").exit_code == 0;
}

nlohmann::json ReadRows(const std::string& path) {
  testing::RunResult r = testing::Run({"node", ParquetMjs(), "read", path});
  EXPECT_EQ(r.exit_code, 0) << path << ": " << r.err;
  if (r.exit_code != 0) return nlohmann::json::array();
  return nlohmann::json::parse(r.out)["rows"];
}

// The fixture's rows re-written (by parquet-wasm, as variable lists like v3 files converted from
// v2.1) into two data files, episodes 0-1 and 2-3, with a string feature added: the episodes are
// located across files, the string column makes each size a build at plan time, and the served
// files hold (as hyparquet reads them) exactly each episode's rows.
TEST(LeRobotV21ViewTest, DataSplitAcrossFilesWithAStringFeature) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/true);
  const nlohmann::json rows = ReadRows(ds + "/data/chunk-000/file-000.parquet");
  ASSERT_EQ(rows.size(), 1492u);
  ASSERT_EQ(::unlink((ds + "/data/chunk-000/file-000.parquet").c_str()), 0);
  const std::vector<std::pair<std::string, std::string>> columns = {
      {"action", "list<float>"},  {"observation.state", "list<float>"}, {"timestamp", "float"},
      {"frame_index", "int64"},   {"episode_index", "int64"},           {"index", "int64"},
      {"task_index", "int64"},    {"language_instruction", "string"}};
  std::map<int64_t, nlohmann::json> want;  // episode -> its rows, with the string
  nlohmann::json spec = {{"files", nlohmann::json::array()}};
  for (int f = 0; f < 2; ++f) {
    nlohmann::json file = {{"path", ds + "/data/chunk-000/file-00" + std::to_string(f) +
                                        ".parquet"},
                           {"columns", nlohmann::json::array()}};
    for (const auto& [name, type] : columns) {
      nlohmann::json values = nlohmann::json::array();
      for (nlohmann::json row : rows) {
        const int64_t ep = row["episode_index"].get<int64_t>();
        if (ep / 2 != f) continue;
        row["language_instruction"] = "grasp " + std::string(static_cast<size_t>(ep) + 1, 'x');
        values.push_back(row[name]);
        if (name == "action") want[ep].push_back(row);
      }
      file["columns"].push_back({{"name", name}, {"type", type}, {"values", values}});
    }
    spec["files"].push_back(file);
  }
  testing::WriteFile(tmp / "spec.json", spec.dump());
  testing::RunResult w = testing::Run({"node", ParquetMjs(), "write", tmp / "spec.json"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  auto info = nlohmann::ordered_json::parse(testing::ReadFile(ds + "/meta/info.json"));
  info["features"]["language_instruction"] = {{"dtype", "string"}, {"shape", {1}}};
  testing::WriteFile(ds + "/meta/info.json", info.dump(4));

  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  ASSERT_TRUE(AddLeRobotV21Files(*o.dataset, &o.plan).ok());
  ASSERT_EQ(o.plan.v21_data.size(), 4u) << (o.plan.v21_notes.empty() ? "" : o.plan.v21_notes[0]);
  const std::vector<V21EpisodeDataFile> files = o.plan.v21_data;
  for (size_t e = 0; e < 4; ++e) {
    EXPECT_EQ(files[e].source_key,
              "data/chunk-000/file-00" + std::to_string(e / 2) + ".parquet");
    EXPECT_EQ(files[e].first_row, e % 2 == 0 ? 0 : files[e - 1].count) << e;
    EXPECT_EQ(files[e].count, want[static_cast<int64_t>(e)].size()) << e;
  }
  auto view = OpenLeRobotView(*o.dataset, std::move(o.plan), LeRobotViewOptions{}, o.dataset);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  for (size_t e = 0; e < 4; ++e) {
    const std::string bytes = ReadKey(**view, files[e].key);
    EXPECT_EQ(bytes.size(), files[e].size) << files[e].key;
    const std::string path = tmp / ("episode" + std::to_string(e) + ".parquet");
    testing::WriteFile(path, bytes);
    EXPECT_EQ(ReadRows(path), want[static_cast<int64_t>(e)]) << files[e].key;
  }
}

TEST(LeRobotV21ViewTest, UnsupportedDataFeatureLeavesDataOutWithANote) {
  testing::TempDir tmp;
  const std::string ds = tmp / "ds";
  CopyFixture(ds, /*cameras=*/true);
  auto info = nlohmann::ordered_json::parse(testing::ReadFile(ds + "/meta/info.json"));
  info["features"]["observation.image"] = {{"dtype", "image"}, {"shape", {8, 8, 3}}};
  testing::WriteFile(ds + "/meta/info.json", info.dump(4));
  Opened o = OpenAndPlan(ds);
  ASSERT_NE(o.dataset, nullptr);
  ASSERT_TRUE(AddLeRobotV21Files(*o.dataset, &o.plan).ok());
  EXPECT_TRUE(o.plan.v21_data.empty());
  std::string notes;
  for (const std::string& n : o.plan.v21_notes) notes += n + "\n";
  EXPECT_NE(notes.find("without data/"), std::string::npos) << notes;
  EXPECT_NE(notes.find("observation.image"), std::string::npos) << notes;
  auto view = OpenLeRobotView(*o.dataset, std::move(o.plan), LeRobotViewOptions{}, o.dataset);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  Result<std::optional<Node>> data = (*view)->catalog().Find("data");
  ASSERT_TRUE(data.ok());
  EXPECT_FALSE(data->has_value());
  bool warned = false;
  for (const std::string& w : (*view)->warnings()) {
    warned = warned || w.find("without data/") != std::string::npos;
  }
  EXPECT_TRUE(warned);
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
