// ParquetFile::ReadNestedDoubleList against lists nested three deep as parquet-wasm (the Rust
// `parquet` crate, like pyarrow) writes them through scripts/lerobot-parquet/parquet.mjs
// (`list3<double>`): LeRobot v3's per-episode camera stats, plus empty and null lists at every
// depth and a null element. Skips without node.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/lerobot/parquet_reader.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

std::string ParquetMjs() { return std::string(PACKFS_SOURCE_DIR) + "/scripts/lerobot-parquet"; }

bool NodeReady() {
  if (!testing::HasCommand("node")) return false;
  if (testing::Sh("test -d '" + ParquetMjs() + "/node_modules'").exit_code == 0) return true;
  if (!testing::HasCommand("npm")) return false;
  return testing::Sh("npm ci --silent --no-audit --no-fund --prefix '" + ParquetMjs() + "'")
             .exit_code == 0;
}

// The rows as JSON, the way the reader's result would print (null lists read as empty).
nlohmann::json ToJson(const ParquetNestedList& l) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : l.values) out.push_back(v);
  for (const auto& inner : l.lists) out.push_back(ToJson(inner));
  return out;
}

nlohmann::json NullsAsEmpty(const nlohmann::json& j) {
  if (j.is_null()) return nlohmann::json::array();
  if (!j.is_array()) return j;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& x : j) out.push_back(NullsAsEmpty(x));
  return out;
}

void Write(const testing::TempDir& tmp, const std::string& path, const nlohmann::json& values) {
  nlohmann::json spec = {
      {"files",
       {{{"path", path},
         {"columns",
          {{{"name", "stats/observation.images.front/mean"},
            {"type", "list3<double>"},
            {"values", values}},
           {{"name", "n"}, {"type", "int64"}, {"values", nlohmann::json::array()}}}}}}}};
  auto& n = spec["files"][0]["columns"][1]["values"];
  for (size_t i = 0; i < values.size(); ++i) n.push_back(i);
  testing::WriteFile(tmp / "spec.json", spec.dump());
  auto run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "write", tmp / "spec.json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
}

TEST(ParquetNested, ListsThreeDeepReadAsWritten) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  testing::TempDir tmp;
  const auto values = nlohmann::json::parse(R"([
    [[[0.023529411764705882]], [[0.043137254901960784]], [[0.10588235294117647]]],
    [],
    null,
    [[], null, [[]], [null], [[1.5, -2.25], [3.0]]],
    [[[1e-300, 1e300, 0.0, -0.0]]]
  ])");
  const std::string path = tmp / "nested.parquet";
  Write(tmp, path, values);
  auto src = FileShardSource::Open(path, "nested.parquet");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto f = ParquetFile::Open(**src);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto rows = f->ReadNestedDoubleList("stats/observation.images.front/mean");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), values.size());
  for (size_t r = 0; r < values.size(); ++r) {
    EXPECT_EQ(ToJson((*rows)[r]), NullsAsEmpty(values[r])) << r;
  }
  // hyparquet reads the same file the same way.
  auto run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "read", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto read = nlohmann::json::parse(run.out)["rows"];
  for (size_t r = 0; r < values.size(); ++r) {
    EXPECT_EQ(NullsAsEmpty(read[r]["stats/observation.images.front/mean"]),
              NullsAsEmpty(values[r]))
        << r;
  }
  // The other readers refuse the column; a flat column is not a nested list.
  EXPECT_FALSE(f->ReadDoubleList("stats/observation.images.front/mean").ok());
  EXPECT_EQ(f->ReadNestedDoubleList("n").status().code(), Code::kNotSupported);
  EXPECT_EQ(f->ReadNestedDoubleList("nope").status().code(), Code::kNotFound);
}

TEST(ParquetNested, NullElementIsRefused) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  testing::TempDir tmp;
  const std::string path = tmp / "null.parquet";
  Write(tmp, path, nlohmann::json::parse(R"([[[[1.0]]], [[[2.0, null]]]])"));
  auto src = FileShardSource::Open(path, "null.parquet");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto f = ParquetFile::Open(**src);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto rows = f->ReadNestedDoubleList("stats/observation.images.front/mean");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), Code::kNotSupported);
  EXPECT_NE(rows.status().message().find("null.parquet, column stats/observation.images.front/mean"
                                         " holds a null element"),
            std::string::npos)
      << rows.status().ToString();
}

}  // namespace
}  // namespace packfs
