// core/lerobot_v21_data: v2.1 episode parquet files cut from v3 data files. Sources: the real
// LeRobot v3 recording in tests/fixtures/lerobot-v3-record-test (pyarrow: SNAPPY, dictionary
// pages, one row group per episode, fixed-size lists), v3-like files written by parquet_writer
// (several files and row groups, variable lists as in datasets converted from v2.1, bools, a
// float64 vector) and, when node is installed, by parquet-wasm (scripts/lerobot-parquet). Every
// value of every episode is compared with the source rows, the computed size with the built one,
// and the files are read back by ParquetFile, hyparquet and parquet-wasm. Hostile sources fail
// with messages naming the file, column and row.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lerobot/lerobot_v21_data.h"
#include "core/lerobot/parquet_reader.h"
#include "core/lerobot/parquet_writer.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using parquet::ColumnValues;

template <typename T>
T Ok(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

std::string Fixture(const std::string& rel) {
  return testing::FixturesDir() + "/lerobot-v3-record-test/" + rel;
}

const char kFixtureData[] = "data/chunk-000/file-000.parquet";

// Checks that every column of `episode` (a built v2.1 file) equals rows [first, first + count)
// of `source`, column by column, whatever the columns' types.
void ExpectSameRows(const LeRobotV21DataSchema& schema, const ParquetFile& source, uint64_t first,
                    uint64_t count, const std::vector<uint8_t>& episode) {
  MemoryShardSource src("episode.parquet", episode);
  ParquetFile out = Ok(ParquetFile::Open(src));
  ASSERT_EQ(out.num_rows(), count);
  std::vector<std::string> names;
  for (const auto& c : schema.columns) names.push_back(c.key);
  for (const auto& c : schema.columns) {
    SCOPED_TRACE(c.key);
    const bool floating = c.dtype == "float32" || c.dtype == "float64";
    if (c.vector && floating) {
      auto a = Ok(source.ReadDoubleList(c.key));
      auto b = Ok(out.ReadDoubleList(c.key));
      ASSERT_EQ(b, std::vector<std::vector<double>>(a.begin() + first, a.begin() + first + count));
      for (const auto& row : b) ASSERT_EQ(row.size(), c.length);
    } else if (c.vector) {
      auto a = Ok(source.ReadInt64List(c.key));
      auto b = Ok(out.ReadInt64List(c.key));
      ASSERT_EQ(b, std::vector<std::vector<int64_t>>(a.begin() + first, a.begin() + first + count));
    } else if (floating) {
      auto a = Ok(source.ReadDouble(c.key));
      auto b = Ok(out.ReadDouble(c.key));
      ASSERT_EQ(b,
                std::vector<std::optional<double>>(a.begin() + first, a.begin() + first + count));
    } else {
      auto a = Ok(source.ReadInt64(c.key));
      auto b = Ok(out.ReadInt64(c.key));
      ASSERT_EQ(b,
                std::vector<std::optional<int64_t>>(a.begin() + first, a.begin() + first + count));
    }
  }
  EXPECT_EQ(out.column_paths().size(), schema.writer_columns.size());
}

struct FixtureEpisodes {
  std::vector<LeRobotV3EpisodeRange> ranges;
};

FixtureEpisodes ReadFixtureEpisodes() {
  const std::string rel = "meta/episodes/chunk-000/file-000.parquet";
  MemoryShardSource src(rel, testing::ReadBytes(Fixture(rel)));
  ParquetFile f = Ok(ParquetFile::Open(src));
  auto ep = Ok(f.ReadInt64("episode_index"));
  auto from = Ok(f.ReadInt64("dataset_from_index"));
  auto to = Ok(f.ReadInt64("dataset_to_index"));
  FixtureEpisodes out;
  for (size_t i = 0; i < ep.size(); ++i) out.ranges.push_back({*ep[i], *from[i], *to[i]});
  return out;
}

TEST(LeRobotV21Data, SchemaAndHuggingfaceMetadataOfTheRecording) {
  auto schema =
      Ok(LeRobotV21DataSchemaFromInfo(testing::ReadFile(Fixture("meta/info.json")), "info.json"));
  std::vector<std::string> keys;
  for (const auto& c : schema.columns) keys.push_back(c.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"action", "observation.state", "timestamp",
                                            "frame_index", "episode_index", "index",
                                            "task_index"}));
  EXPECT_EQ(LeRobotV21HuggingfaceMetadata(schema),
            "{\"info\": {\"features\": {\"action\": {\"feature\": {\"dtype\": \"float32\", "
            "\"_type\": \"Value\"}, \"length\": 6, \"_type\": \"Sequence\"}, "
            "\"observation.state\": {\"feature\": {\"dtype\": \"float32\", \"_type\": "
            "\"Value\"}, \"length\": 6, \"_type\": \"Sequence\"}, \"timestamp\": {\"dtype\": "
            "\"float32\", \"_type\": \"Value\"}, \"frame_index\": {\"dtype\": \"int64\", "
            "\"_type\": \"Value\"}, \"episode_index\": {\"dtype\": \"int64\", \"_type\": "
            "\"Value\"}, \"index\": {\"dtype\": \"int64\", \"_type\": \"Value\"}, "
            "\"task_index\": {\"dtype\": \"int64\", \"_type\": \"Value\"}}}}");
  for (uint64_t rows : {0, 1, 999, 1000, 1001, 2500}) {
    EXPECT_TRUE(LeRobotV21EpisodeParquetSize(schema, rows).ok()) << rows;
  }
}

TEST(LeRobotV21Data, EveryEpisodeOfTheRecordingEqualsItsSourceRows) {
  auto schema =
      Ok(LeRobotV21DataSchemaFromInfo(testing::ReadFile(Fixture("meta/info.json")), "info.json"));
  MemoryShardSource data(kFixtureData, testing::ReadBytes(Fixture(kFixtureData)));
  ParquetFile source = Ok(ParquetFile::Open(data));
  const auto episodes = ReadFixtureEpisodes();
  ASSERT_EQ(episodes.ranges.size(), 4u);
  auto located = Ok(LocateLeRobotEpisodes(episodes.ranges, {{kFixtureData, source.num_rows()}},
                                          "meta/episodes/chunk-000/file-000.parquet"));
  uint64_t next = 0;
  for (size_t e = 0; e < located.size(); ++e) {
    SCOPED_TRACE(e);
    const auto& loc = located[e];
    EXPECT_EQ(loc.file, 0u);
    EXPECT_EQ(loc.first_row, next);
    next += loc.count;
    auto bytes = Ok(LeRobotV21EpisodeParquet(schema, data, loc.first_row, loc.count,
                                             episodes.ranges[e].episode_index));
    EXPECT_EQ(bytes.size(), Ok(LeRobotV21EpisodeParquetSize(schema, loc.count)));
    ExpectSameRows(schema, source, loc.first_row, loc.count, bytes);
    // The episode_index column is the episode's; frame_index counts from 0.
    MemoryShardSource src("episode.parquet", bytes);
    ParquetFile out = Ok(ParquetFile::Open(src));
    auto ep = Ok(out.ReadInt64("episode_index"));
    auto frame = Ok(out.ReadInt64("frame_index"));
    for (uint64_t r = 0; r < loc.count; ++r) {
      ASSERT_EQ(ep[r], episodes.ranges[e].episode_index);
      ASSERT_EQ(frame[r], static_cast<int64_t>(r));
    }
    EXPECT_EQ(out.row_group_rows().size(), (loc.count + 999) / 1000);
  }
  EXPECT_EQ(next, source.num_rows());
  // The wrong episode for the rows is caught.
  auto wrong = LeRobotV21EpisodeParquet(schema, data, located[1].first_row, located[1].count, 2);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kCorruption);
  EXPECT_NE(wrong.status().message().find(std::string(kFixtureData) +
                                          ", column episode_index, row 373 holds 1, not episode 2"),
            std::string::npos)
      << wrong.status().ToString();
}

// --- v3-like sources written by parquet_writer -----------------------------------------------

constexpr char kInfo[] = R"({
  "codebase_version": "v3.0",
  "fps": 30,
  "features": {
    "observation.state": {"dtype": "float32", "shape": [3], "names": null, "fps": 30},
    "observation.images.cam": {"dtype": "video", "shape": [8, 8, 3], "names": null},
    "action": {"dtype": "float64", "shape": [2], "names": ["a", "b"]},
    "language": {"dtype": "language", "shape": [1], "names": null},
    "next.done": {"dtype": "bool", "shape": [1], "names": null},
    "flags": {"dtype": "bool", "shape": [2], "names": null},
    "timestamp": {"dtype": "float32", "shape": [1], "names": null},
    "frame_index": {"dtype": "int64", "shape": [1], "names": null},
    "episode_index": {"dtype": "int64", "shape": [1], "names": null},
    "index": {"dtype": "int64", "shape": [1], "names": null},
    "task_index": {"dtype": "int64", "shape": [1], "names": null}
  }
})";

// Episode e of the synthetic dataset has 3 + 7 * e rows (0 .. 6); files hold episodes {0..3}
// and {4..6}.
uint64_t EpisodeLength(int64_t e) { return 3 + 7 * static_cast<uint64_t>(e); }

struct SourceRow {
  int64_t index, episode, frame;
};

// Hostile knobs for one row of the synthetic source.
struct Damage {
  int64_t row = -1;        // file row to damage
  bool short_list = false; // observation.state gets 2 values there
  bool null_scalar = false;  // timestamp is null there
  bool null_element = false;  // action holds a null element there
};

std::vector<uint8_t> WriteSourceFile(int64_t first_episode, int64_t end_episode,
                                     uint64_t row_group_rows, const Damage& damage = {}) {
  std::vector<SourceRow> rows;
  int64_t index = 0;
  for (int64_t e = 0; e < end_episode; ++e) {
    for (uint64_t f = 0; f < EpisodeLength(e); ++f, ++index) {
      if (e >= first_episode) rows.push_back({index, e, static_cast<int64_t>(f)});
    }
  }
  auto col = [](std::string name, int32_t type, bool list) {
    parquet::WriterColumn c;
    c.name = std::move(name);
    c.type = type;
    c.list = list;  // variable lists, as pandas writes datasets converted from v2.1
    return c;
  };
  // A different column order than info.json, and an extra column the view drops.
  std::vector<parquet::WriterColumn> cols = {
      col("index", parquet::kInt64, false),       col("observation.state", parquet::kFloat, true),
      col("action", parquet::kDouble, true),      col("next.done", parquet::kBoolean, false),
      col("flags", parquet::kBoolean, true),      col("timestamp", parquet::kFloat, false),
      col("frame_index", parquet::kInt64, false), col("episode_index", parquet::kInt64, false),
      col("task_index", parquet::kInt32, false),  col("extra", parquet::kDouble, false),
  };
  cols.back().optional = false;
  parquet::WriterOptions opt;
  opt.row_group_rows = row_group_rows;
  auto supply = [&](size_t c) -> Result<ColumnValues> {
    ColumnValues cv;
    const auto shape = parquet::WriterLeafShape(cols[c]);
    for (size_t i = 0; i < rows.size(); ++i) {
      const SourceRow& r = rows[i];
      const bool hit = static_cast<int64_t>(i) == damage.row;
      auto scalar = [&](bool present) {
        if (shape.max_def > 0) cv.def.push_back(present ? shape.max_def : 0);
        ++cv.num_levels;
      };
      auto list = [&](size_t n, bool null_at_1) {
        for (size_t j = 0; j < n; ++j) {
          cv.def.push_back(null_at_1 && j == 1 ? 2 : 3);
          cv.rep.push_back(j == 0 ? 0 : 1);
          ++cv.num_levels;
        }
      };
      const double x = static_cast<double>(r.index);
      switch (c) {
        case 0: scalar(true); cv.ints.push_back(r.index); break;
        case 1:
          list(hit && damage.short_list ? 2 : 3, false);
          for (int j = 0; j < (hit && damage.short_list ? 2 : 3); ++j) {
            cv.doubles.push_back(static_cast<float>(x / 3 + j));
          }
          break;
        case 2:
          list(2, hit && damage.null_element);
          cv.doubles.push_back(x * 1e-3 - 1);
          if (!(hit && damage.null_element)) cv.doubles.push_back(x * x + 0.1);
          break;
        case 3: scalar(true); cv.ints.push_back(r.frame + 1 == static_cast<int64_t>(
                                                    EpisodeLength(r.episode))); break;
        case 4: list(2, false); cv.ints.push_back(r.index % 2); cv.ints.push_back(r.index % 3 == 0);
          break;
        case 5:
          scalar(!(hit && damage.null_scalar));
          if (!(hit && damage.null_scalar)) {
            cv.doubles.push_back(static_cast<float>(r.frame / 30.0));
          }
          break;
        case 6: scalar(true); cv.ints.push_back(r.frame); break;
        case 7: scalar(true); cv.ints.push_back(r.episode); break;
        case 8: scalar(true); cv.ints.push_back(r.episode % 2); break;
        default: scalar(true); cv.doubles.push_back(-x); break;
      }
    }
    return cv;
  };
  return Ok(parquet::WriteParquetFile(cols, rows.size(), opt, supply));
}

std::vector<LeRobotV3EpisodeRange> SyntheticRanges() {
  std::vector<LeRobotV3EpisodeRange> out;
  int64_t from = 0;
  for (int64_t e = 0; e < 7; ++e) {
    const auto n = static_cast<int64_t>(EpisodeLength(e));
    out.push_back({e, from, from + n});
    from += n;
  }
  return out;
}

TEST(LeRobotV21Data, SchemaSkipsVideoAndUnknownDtypes) {
  auto schema = Ok(LeRobotV21DataSchemaFromInfo(kInfo, "meta/info.json"));
  std::vector<std::string> keys;
  for (const auto& c : schema.columns) keys.push_back(c.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"observation.state", "action", "next.done", "flags",
                                            "timestamp", "frame_index", "episode_index", "index",
                                            "task_index"}));
  const std::string hf = LeRobotV21HuggingfaceMetadata(schema);
  EXPECT_NE(hf.find("\"next.done\": {\"dtype\": \"bool\", \"_type\": \"Value\"}"),
            std::string::npos);
  EXPECT_NE(hf.find("\"flags\": {\"feature\": {\"dtype\": \"bool\", \"_type\": \"Value\"}, "
                    "\"length\": 2, \"_type\": \"Sequence\"}"),
            std::string::npos);
  // Non-ASCII feature names are escaped as json.dumps does by default.
  auto uni = Ok(LeRobotV21DataSchemaFromInfo(
      R"({"features": {"b\u00e9\ud83d\ude00": {"dtype": "int64", "shape": [1]}}})", "i"));
  EXPECT_EQ(LeRobotV21HuggingfaceMetadata(uni),
            "{\"info\": {\"features\": {\"b\\u00e9\\ud83d\\ude00\": {\"dtype\": \"int64\", "
            "\"_type\": \"Value\"}}}}");
  // What is not written yet, or not valid, is refused naming the feature.
  for (const char* bad : {R"({"features": {"img": {"dtype": "image", "shape": [8, 8, 3]}}})",
                          R"({"features": {"m": {"dtype": "float32", "shape": [2, 2]}}})",
                          R"({"features": {"s": {"dtype": "float32"}}})"}) {
    auto r = LeRobotV21DataSchemaFromInfo(bad, "meta/info.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("meta/info.json: feature"), std::string::npos);
  }
  EXPECT_EQ(LeRobotV21DataSchemaFromInfo("{", "meta/info.json").status().code(),
            Code::kCorruption);
  // A string feature is written but its size needs a build.
  auto str = Ok(LeRobotV21DataSchemaFromInfo(
      R"({"features": {"s": {"dtype": "string", "shape": [1]}}})", "i"));
  EXPECT_EQ(LeRobotV21EpisodeParquetSize(str, 5).status().code(), Code::kNotSupported);
}

TEST(LeRobotV21Data, EpisodesAcrossFilesAndRowGroupsEqualTheirSourceRows) {
  auto schema = Ok(LeRobotV21DataSchemaFromInfo(kInfo, "meta/info.json"));
  const std::vector<std::vector<uint8_t>> files = {WriteSourceFile(0, 4, 5),
                                                   WriteSourceFile(4, 7, 9)};
  const std::vector<std::string> names = {"data/chunk-000/file-000.parquet",
                                          "data/chunk-000/file-001.parquet"};
  std::vector<MemoryShardSource> srcs;
  std::vector<LeRobotV3DataFile> listing;
  for (size_t i = 0; i < files.size(); ++i) srcs.emplace_back(names[i], files[i]);
  std::vector<ParquetFile> parsed;
  for (auto& s : srcs) {
    parsed.push_back(Ok(ParquetFile::Open(s)));
    listing.push_back({s.name(), parsed.back().num_rows()});
  }
  const auto ranges = SyntheticRanges();
  auto located = Ok(LocateLeRobotEpisodes(ranges, listing, "meta/episodes/x.parquet"));
  for (size_t e = 0; e < ranges.size(); ++e) {
    SCOPED_TRACE(e);
    const auto& loc = located[e];
    EXPECT_EQ(loc.file, e < 4 ? 0u : 1u);
    EXPECT_EQ(loc.count, EpisodeLength(static_cast<int64_t>(e)));
    auto bytes = Ok(LeRobotV21EpisodeParquet(schema, srcs[loc.file], loc.first_row, loc.count,
                                             ranges[e].episode_index));
    EXPECT_EQ(bytes.size(), Ok(LeRobotV21EpisodeParquetSize(schema, loc.count)));
    ExpectSameRows(schema, parsed[loc.file], loc.first_row, loc.count, bytes);
  }
}

TEST(LeRobotV21Data, SizeIsExactForManyRowCounts) {
  auto schema = Ok(LeRobotV21DataSchemaFromInfo(kInfo, "meta/info.json"));
  // One file with a single long episode to cut any row count from.
  const auto file = WriteSourceFile(6, 7, 1000);  // episode 6: 45 rows
  MemoryShardSource src("file.parquet", file);
  for (uint64_t count : {0, 1, 2, 8, 9, 44, 45}) {
    auto bytes = Ok(LeRobotV21EpisodeParquet(schema, src, 0, count));
    EXPECT_EQ(bytes.size(), Ok(LeRobotV21EpisodeParquetSize(schema, count))) << count;
  }
  // Larger counts: a long synthetic source of fixed-size rows.
  auto fixed = Ok(LeRobotV21DataSchemaFromInfo(testing::ReadFile(Fixture("meta/info.json")),
                                               "info.json"));
  for (uint64_t rows : {999, 1000, 1001, 2500, 4096}) {
    auto bytes = Ok(parquet::WriteParquetFile(
        fixed.writer_columns, rows, fixed.writer_options, [&](size_t c) -> Result<ColumnValues> {
          ColumnValues cv;
          const auto& col = fixed.columns[c];
          const uint64_t n = col.vector ? col.length : 1;
          cv.num_levels = rows * n;
          cv.def.assign(cv.num_levels, parquet::WriterLeafShape(fixed.writer_columns[c]).max_def);
          if (col.vector) {
            for (uint64_t i = 0; i < cv.num_levels; ++i) cv.rep.push_back(i % n != 0);
          }
          for (uint64_t i = 0; i < cv.num_levels; ++i) {
            if (col.dtype == "float32") cv.doubles.push_back(static_cast<float>(i) / 3);
            else cv.ints.push_back(static_cast<int64_t>(i * i));
          }
          return cv;
        }));
    EXPECT_EQ(bytes.size(), Ok(LeRobotV21EpisodeParquetSize(fixed, rows))) << rows;
  }
}

TEST(LeRobotV21Data, StringFeaturesAreCopiedAndNeedABuildForTheirSize) {
  auto schema = Ok(LeRobotV21DataSchemaFromInfo(
      R"({"features": {"language_instruction": {"dtype": "string", "shape": [1]},
                       "index": {"dtype": "int64", "shape": [1]}}})",
      "meta/info.json"));
  EXPECT_EQ(LeRobotV21HuggingfaceMetadata(schema),
            "{\"info\": {\"features\": {\"language_instruction\": {\"dtype\": \"string\", "
            "\"_type\": \"Value\"}, \"index\": {\"dtype\": \"int64\", \"_type\": \"Value\"}}}}");
  const uint64_t rows = 2100;
  auto text = [](uint64_t r) {
    return r % 9 == 0 ? std::string() : "pick cube " + std::to_string(r);
  };
  std::vector<parquet::WriterColumn> cols(2);
  cols[0].name = "index";
  cols[1].name = "language_instruction";
  cols[1].type = parquet::kByteArray;
  cols[1].utf8 = true;
  parquet::WriterOptions opt;
  opt.row_group_rows = 700;
  auto source_bytes = Ok(parquet::WriteParquetFile(cols, rows, opt, [&](size_t c) {
    ColumnValues cv;
    cv.num_levels = rows;
    cv.def.assign(rows, 1);
    for (uint64_t r = 0; r < rows; ++r) {
      if (c == 0) {
        cv.ints.push_back(static_cast<int64_t>(r));
      } else {
        cv.strings.push_back(text(r));
      }
    }
    return Result<ColumnValues>(std::move(cv));
  }));
  MemoryShardSource src("data/chunk-000/file-000.parquet", source_bytes);
  ParquetFile source = Ok(ParquetFile::Open(src));
  EXPECT_EQ(LeRobotV21EpisodeParquetSize(schema, 1200).status().code(), Code::kNotSupported);
  auto bytes = Ok(LeRobotV21EpisodeParquet(schema, src, 650, 1200));
  MemoryShardSource out_src("episode.parquet", bytes);
  ParquetFile out = Ok(ParquetFile::Open(out_src));
  EXPECT_EQ(out.row_group_rows(), (std::vector<uint64_t>{1000, 200}));
  auto got = Ok(out.ReadString("language_instruction"));
  auto index = Ok(out.ReadInt64("index"));
  ASSERT_EQ(got.size(), 1200u);
  for (uint64_t r = 0; r < 1200; ++r) {
    ASSERT_EQ(got[r], text(650 + r)) << r;
    ASSERT_EQ(index[r], static_cast<int64_t>(650 + r)) << r;
  }
}

void ExpectCorruption(const Result<std::vector<uint8_t>>& r, const std::string& says) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorruption) << r.status().ToString();
  EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().ToString();
}

TEST(LeRobotV21Data, HostileSourcesFailNamingFileColumnAndRow) {
  auto schema = Ok(LeRobotV21DataSchemaFromInfo(kInfo, "meta/info.json"));
  const std::string name = "data/chunk-000/file-000.parquet";
  {
    MemoryShardSource src(name, WriteSourceFile(0, 4, 5, Damage{12, true, false, false}));
    ExpectCorruption(LeRobotV21EpisodeParquet(schema, src, 10, 13),
                     name + ", column observation.state, row 12 holds 2 values, but info.json's "
                            "shape says 3");
    // Rows that do not include the damaged one are fine.
    EXPECT_TRUE(LeRobotV21EpisodeParquet(schema, src, 0, 10).ok());
  }
  {
    MemoryShardSource src(name, WriteSourceFile(0, 4, 5, Damage{4, false, true, false}));
    ExpectCorruption(LeRobotV21EpisodeParquet(schema, src, 3, 10),
                     name + ", column timestamp, row 4 is null");
  }
  {
    MemoryShardSource src(name, WriteSourceFile(0, 4, 5, Damage{7, false, false, true}));
    ExpectCorruption(LeRobotV21EpisodeParquet(schema, src, 3, 10),
                     name + ", column action, row 7 holds a null element");
  }
  const auto good = WriteSourceFile(0, 4, 5);
  {
    MemoryShardSource src(name, good);
    auto past = LeRobotV21EpisodeParquet(schema, src, 50, 10);
    ASSERT_FALSE(past.ok());
    EXPECT_EQ(past.status().code(), Code::kInvalidArgument);
    EXPECT_NE(past.status().message().find(name + " has 54 rows; rows 50 to 60 lie past its end"),
              std::string::npos)
        << past.status().ToString();
  }
  // Truncated and garbage files, and a file of some other table.
  for (size_t cut : {size_t{0}, size_t{7}, good.size() / 2, good.size() - 1}) {
    MemoryShardSource src(name, std::vector<uint8_t>(good.begin(), good.begin() + cut));
    auto r = LeRobotV21EpisodeParquet(schema, src, 0, 3);
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().ToString();
  }
  for (uint64_t seed = 1; seed < 40; ++seed) {
    auto bytes = good;
    // Damage bytes inside the pages and the footer (keep the magic so the footer is parsed).
    const std::string noise = testing::RandomBytes(16, seed);
    const size_t at = 4 + (seed * 7919) % (bytes.size() - 28);
    std::copy(noise.begin(), noise.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at));
    MemoryShardSource src(name, bytes);
    auto r = LeRobotV21EpisodeParquet(schema, src, 0, 54);
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().ToString();
    }
  }
  {
    MemoryShardSource src("meta/episodes/chunk-000/file-000.parquet",
                          testing::ReadBytes(Fixture("meta/episodes/chunk-000/file-000.parquet")));
    auto r = LeRobotV21EpisodeParquet(schema, src, 0, 1);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("meta/episodes/chunk-000/file-000.parquet"),
              std::string::npos)
        << r.status().ToString();
  }
}

TEST(LeRobotV21Data, LocateIgnoresFileIndexAndRefusesBadRanges) {
  const std::vector<LeRobotV3DataFile> files = {{"data/chunk-000/file-000.parquet", 10},
                                                {"data/chunk-000/file-001.parquet", 0},
                                                {"data/chunk-001/file-000.parquet", 5}};
  auto ok = Ok(LocateLeRobotEpisodes({{0, 0, 4}, {1, 4, 10}, {2, 10, 15}}, files, "eps"));
  ASSERT_EQ(ok.size(), 3u);
  EXPECT_EQ(ok[1].file, 0u);
  EXPECT_EQ(ok[1].first_row, 4u);
  EXPECT_EQ(ok[1].count, 6u);
  EXPECT_EQ(ok[2].file, 2u);
  EXPECT_EQ(ok[2].first_row, 0u);
  auto bad = [&](LeRobotV3EpisodeRange e, const std::string& says) {
    auto r = LocateLeRobotEpisodes({e}, files, "meta/episodes/chunk-000/file-000.parquet");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kCorruption);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("meta/episodes/chunk-000/file-000.parquet: episode " +
                                        std::to_string(e.episode_index)),
              std::string::npos);
  };
  bad({5, 8, 12}, "spans data/chunk-000/file-000.parquet and the next");
  bad({6, 12, 16}, "the data files hold 15 rows");
  bad({7, 3, 3}, "empty or inverted");
  bad({8, -1, 3}, "empty or inverted");
}

// --- the Node readers, and a source written by parquet-wasm ------------------------------------

std::string ParquetMjs() { return std::string(PACKFS_SOURCE_DIR) + "/scripts/lerobot-parquet"; }

bool NodeReady() {
  if (!testing::HasCommand("node")) return false;
  if (testing::Sh("test -d '" + ParquetMjs() + "/node_modules'").exit_code == 0) return true;
  if (!testing::HasCommand("npm")) return false;
  return testing::Sh("npm ci --silent --no-audit --no-fund --prefix '" + ParquetMjs() + "'")
             .exit_code == 0;
}

TEST(LeRobotV21Data, NodeReadersReadTheEpisodeFiles) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  auto schema =
      Ok(LeRobotV21DataSchemaFromInfo(testing::ReadFile(Fixture("meta/info.json")), "info.json"));
  MemoryShardSource data(kFixtureData, testing::ReadBytes(Fixture(kFixtureData)));
  ParquetFile source = Ok(ParquetFile::Open(data));
  testing::TempDir tmp;
  const std::string path = tmp / "episode_000001.parquet";
  auto bytes = Ok(LeRobotV21EpisodeParquet(schema, data, 373, 374, 1));
  testing::WriteFile(path, std::string(bytes.begin(), bytes.end()));

  auto run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "read", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto json = nlohmann::json::parse(run.out);
  ASSERT_EQ(json["rows"].size(), 374u);
  auto action = Ok(source.ReadDoubleList("action"));
  auto ts = Ok(source.ReadDouble("timestamp"));
  auto index = Ok(source.ReadInt64("index"));
  for (size_t r = 0; r < 374; ++r) {
    const auto& row = json["rows"][r];
    ASSERT_EQ(row["action"].get<std::vector<double>>(), action[373 + r]);
    ASSERT_EQ(row["timestamp"].get<double>(), *ts[373 + r]);
    ASSERT_EQ(row["index"].get<int64_t>(), *index[373 + r]);
    ASSERT_EQ(row["episode_index"].get<int64_t>(), 1);
    ASSERT_EQ(row["frame_index"].get<int64_t>(), static_cast<int64_t>(r));
  }

  run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "schema", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["rows_read"], 374);
  // No ARROW:schema: the Rust reader gives plain lists (datasets casts them to the fixed-size
  // Sequence of the huggingface key).
  EXPECT_EQ(json["fields"],
            nlohmann::json::parse(R"({"action": "List<Float32>", "observation.state":
              "List<Float32>", "timestamp": "Float32", "frame_index": "Int64",
              "episode_index": "Int64", "index": "Int64", "task_index": "Int64"})"));
  EXPECT_EQ(json["metadata"]["huggingface"], LeRobotV21HuggingfaceMetadata(schema));
  EXPECT_FALSE(json["metadata"].contains("ARROW:schema"));
}

TEST(LeRobotV21Data, NodeReadersReadBoolsAndDoubleVectors) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  auto schema = Ok(LeRobotV21DataSchemaFromInfo(kInfo, "meta/info.json"));
  MemoryShardSource src("data/chunk-000/file-000.parquet", WriteSourceFile(0, 4, 5));
  ParquetFile source = Ok(ParquetFile::Open(src));
  // Episode 3: rows 30 .. 53 of the file.
  auto bytes = Ok(LeRobotV21EpisodeParquet(schema, src, 30, 24, 3));
  testing::TempDir tmp;
  const std::string path = tmp / "episode_000003.parquet";
  testing::WriteFile(path, std::string(bytes.begin(), bytes.end()));
  auto run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "read", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto rows = nlohmann::json::parse(run.out)["rows"];
  ASSERT_EQ(rows.size(), 24u);
  auto action = Ok(source.ReadDoubleList("action"));
  auto flags = Ok(source.ReadInt64List("flags"));
  auto done = Ok(source.ReadInt64("next.done"));
  auto task = Ok(source.ReadInt64("task_index"));
  for (size_t r = 0; r < rows.size(); ++r) {
    SCOPED_TRACE(rows[r].dump());
    EXPECT_EQ(rows[r]["action"].get<std::vector<double>>(), action[30 + r]);
    ASSERT_EQ(rows[r]["flags"].size(), 2u);
    EXPECT_EQ(rows[r]["flags"][0].get<bool>(), flags[30 + r][0] != 0);
    EXPECT_EQ(rows[r]["flags"][1].get<bool>(), flags[30 + r][1] != 0);
    EXPECT_EQ(rows[r]["next.done"].get<bool>(), *done[30 + r] != 0);
    EXPECT_EQ(rows[r]["task_index"].get<int64_t>(), *task[30 + r]);
    EXPECT_EQ(rows[r]["episode_index"].get<int64_t>(), 3);
  }
  EXPECT_TRUE(rows[23]["next.done"].get<bool>());
  run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "schema", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["rows_read"], 24);
  EXPECT_EQ(json["fields"],
            nlohmann::json::parse(R"({"observation.state": "List<Float32>",
              "action": "List<Float64>", "next.done": "Bool", "flags": "List<Bool>",
              "timestamp": "Float32", "frame_index": "Int64", "episode_index": "Int64",
              "index": "Int64", "task_index": "Int64"})"));
}

TEST(LeRobotV21Data, SourceWrittenByParquetWasmWithVariableLists) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  testing::TempDir tmp;
  // Two episodes (4 and 5 rows) in one file, vectors as variable list<float>, written by
  // parquet-wasm with SNAPPY and dictionary pages like pandas/pyarrow.
  nlohmann::json cols = nlohmann::json::array();
  nlohmann::json state = nlohmann::json::array(), ts = state, fi = state, ei = state, ix = state,
                 ti = state;
  for (int r = 0; r < 9; ++r) {
    const int e = r < 4 ? 0 : 1, f = r < 4 ? r : r - 4;
    state.push_back({r * 0.5, -r * 0.25, 1.0 + r});
    ts.push_back(f / 30.0);
    fi.push_back(f);
    ei.push_back(e);
    ix.push_back(r);
    ti.push_back(0);
  }
  cols.push_back({{"name", "observation.state"}, {"type", "list<float>"}, {"values", state}});
  cols.push_back({{"name", "timestamp"}, {"type", "float"}, {"values", ts}});
  cols.push_back({{"name", "frame_index"}, {"type", "int64"}, {"values", fi}});
  cols.push_back({{"name", "episode_index"}, {"type", "int64"}, {"values", ei}});
  cols.push_back({{"name", "index"}, {"type", "int64"}, {"values", ix}});
  cols.push_back({{"name", "task_index"}, {"type", "int64"}, {"values", ti}});
  const std::string data = tmp / "file-000.parquet";
  nlohmann::json spec = {{"files", {{{"path", data}, {"columns", cols}}}}};
  testing::WriteFile(tmp / "spec.json", spec.dump());
  auto run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "write", tmp / "spec.json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;

  auto schema = Ok(LeRobotV21DataSchemaFromInfo(R"({"features": {
      "observation.state": {"dtype": "float32", "shape": [3]},
      "timestamp": {"dtype": "float32", "shape": [1]},
      "frame_index": {"dtype": "int64", "shape": [1]},
      "episode_index": {"dtype": "int64", "shape": [1]},
      "index": {"dtype": "int64", "shape": [1]},
      "task_index": {"dtype": "int64", "shape": [1]}}})",
                                                "meta/info.json"));
  auto src = Ok(FileShardSource::Open(data, "data/chunk-000/file-000.parquet"));
  ParquetFile source = Ok(ParquetFile::Open(*src));
  auto located = Ok(LocateLeRobotEpisodes({{0, 0, 4}, {1, 4, 9}},
                                          {{src->name(), source.num_rows()}}, "episodes"));
  for (size_t e = 0; e < 2; ++e) {
    auto bytes = Ok(LeRobotV21EpisodeParquet(schema, *src, located[e].first_row,
                                             located[e].count, static_cast<int64_t>(e)));
    EXPECT_EQ(bytes.size(), Ok(LeRobotV21EpisodeParquetSize(schema, located[e].count)));
    ExpectSameRows(schema, source, located[e].first_row, located[e].count, bytes);
    const std::string out = tmp / ("episode_" + std::to_string(e) + ".parquet");
    testing::WriteFile(out, std::string(bytes.begin(), bytes.end()));
    run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "read", out});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto rows = nlohmann::json::parse(run.out)["rows"];
    ASSERT_EQ(rows.size(), located[e].count);
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t g = located[e].first_row + r;
      EXPECT_EQ(rows[r]["observation.state"].get<std::vector<double>>(),
                (std::vector<double>{static_cast<float>(g * 0.5), static_cast<float>(-(g * 0.25)),
                                     static_cast<float>(1.0 + g)}));
      EXPECT_EQ(rows[r]["index"].get<int64_t>(), static_cast<int64_t>(g));
    }
  }
  // A row whose list is shorter than the shape, from the same writer.
  state[6] = {1.0, 2.0};
  spec["files"][0]["columns"][0]["values"] = state;
  testing::WriteFile(tmp / "spec.json", spec.dump());
  run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "write", tmp / "spec.json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto bad = Ok(FileShardSource::Open(data, "data/chunk-000/file-000.parquet"));
  ExpectCorruption(LeRobotV21EpisodeParquet(schema, *bad, 4, 5),
                   "data/chunk-000/file-000.parquet, column observation.state, row 6 holds 2 "
                   "values, but info.json's shape says 3");
}

}  // namespace
}  // namespace packfs
