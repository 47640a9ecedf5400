// core/parquet_writer: files read back by packfs's own ParquetFile and by two independent readers
// (hyparquet, pure JS; parquet-wasm, the Rust `parquet` crate) through
// scripts/lerobot-parquet/parquet.mjs; ParquetFileSize equals the written size for many row
// counts; bad input is refused with a message naming the column.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lerobot/parquet_reader.h"
#include "core/lerobot/parquet_writer.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using parquet::ColumnValues;
using parquet::WriterColumn;

template <typename T>
T Ok(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

WriterColumn Col(std::string name, int32_t type, bool optional = true) {
  WriterColumn c;
  c.name = std::move(name);
  c.type = type;
  c.utf8 = type == parquet::kByteArray;
  c.optional = optional;
  return c;
}

WriterColumn ListCol(std::string name, int32_t type, std::optional<uint32_t> fixed) {
  WriterColumn c = Col(std::move(name), type);
  c.list = true;
  c.fixed_length = fixed;
  return c;
}

// A schema with every kind of column the writer supports.
std::vector<WriterColumn> MixedSchema() {
  std::vector<WriterColumn> cols;
  cols.push_back(Col("index", parquet::kInt64, false));
  cols.push_back(Col("small", parquet::kInt32));
  cols.back().int_converted_type = 16;  // INT_16
  cols.push_back(Col("flag", parquet::kBoolean));
  cols.push_back(Col("ts", parquet::kFloat));
  cols.push_back(Col("reward", parquet::kDouble));  // with nulls
  cols.push_back(Col("note", parquet::kByteArray));  // with nulls
  cols.push_back(ListCol("state", parquet::kFloat, 3));
  cols.push_back(ListCol("var", parquet::kInt64, std::nullopt));  // null/empty lists
  return cols;
}

int64_t Small(uint64_t r) { return static_cast<int64_t>(r % 200) - 100; }
bool Flag(uint64_t r) { return r % 3 == 1; }
float Ts(uint64_t r) { return static_cast<float>(static_cast<double>(r) / 30); }
std::optional<double> Reward(uint64_t r) {
  if (r % 7 == 3) return std::nullopt;
  return static_cast<double>(r) * 1.1 - 5;
}
std::optional<std::string> Note(uint64_t r) {
  if (r % 5 == 0) return std::nullopt;
  if (r % 5 == 1) return std::string();
  return "note é " + std::to_string(r);
}
float State(uint64_t r, int j) { return static_cast<float>(static_cast<double>(r) * 0.5 + j); }
// Row r's "var" list: null when r % 6 == 0, else r % 4 elements.
std::optional<std::vector<int64_t>> Var(uint64_t r) {
  if (r % 6 == 0) return std::nullopt;
  std::vector<int64_t> v;
  for (uint64_t j = 0; j < r % 4; ++j) v.push_back(static_cast<int64_t>(r * 1000 + j) - 7);
  return v;
}

Result<ColumnValues> MixedColumn(size_t c, uint64_t rows) {
  ColumnValues cv;
  auto flat = [&](bool present, uint32_t max_def) {
    if (max_def > 0) cv.def.push_back(present ? max_def : 0);
    ++cv.num_levels;
  };
  for (uint64_t r = 0; r < rows; ++r) {
    switch (c) {
      case 0: flat(true, 0); cv.ints.push_back(static_cast<int64_t>(r) * 3 - 1); break;
      case 1: flat(true, 1); cv.ints.push_back(Small(r)); break;
      case 2: flat(true, 1); cv.ints.push_back(Flag(r)); break;
      case 3: flat(true, 1); cv.doubles.push_back(Ts(r)); break;
      case 4:
        flat(Reward(r).has_value(), 1);
        if (Reward(r)) cv.doubles.push_back(*Reward(r));
        break;
      case 5:
        flat(Note(r).has_value(), 1);
        if (Note(r)) cv.strings.push_back(*Note(r));
        break;
      case 6:
        for (int j = 0; j < 3; ++j) {
          cv.def.push_back(3);
          cv.rep.push_back(j == 0 ? 0 : 1);
          cv.doubles.push_back(State(r, j));
          ++cv.num_levels;
        }
        break;
      default: {
        const auto v = Var(r);
        if (!v || v->empty()) {
          cv.def.push_back(v ? 1 : 0);
          cv.rep.push_back(0);
          ++cv.num_levels;
        }
        for (size_t j = 0; v && j < v->size(); ++j) {
          cv.def.push_back(3);
          cv.rep.push_back(j == 0 ? 0 : 1);
          cv.ints.push_back((*v)[j]);
          ++cv.num_levels;
        }
      }
    }
  }
  return cv;
}

std::vector<uint8_t> WriteMixed(uint64_t rows, uint64_t group_rows) {
  parquet::WriterOptions opt;
  opt.row_group_rows = group_rows;
  opt.key_value_metadata = {{"huggingface", "{\"x\": 1}"}, {"other", ""}};
  return Ok(parquet::WriteParquetFile(MixedSchema(), rows, opt,
                                      [rows](size_t c) { return MixedColumn(c, rows); }));
}

void CheckMixedWithParquetFile(const std::vector<uint8_t>& bytes, uint64_t rows,
                               size_t expect_groups) {
  MemoryShardSource src("mixed.parquet", bytes);
  ParquetFile f = Ok(ParquetFile::Open(src));
  ASSERT_EQ(f.num_rows(), rows);
  EXPECT_EQ(f.row_group_rows().size(), expect_groups);
  auto index = Ok(f.ReadInt64("index"));
  auto small = Ok(f.ReadInt64("small"));
  auto flag = Ok(f.ReadInt64("flag"));
  auto ts = Ok(f.ReadDouble("ts"));
  auto reward = Ok(f.ReadDouble("reward"));
  auto note = Ok(f.ReadString("note"));
  auto state = Ok(f.ReadDoubleList("state"));
  auto var = Ok(f.ReadInt64List("var"));
  for (uint64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(index[r], static_cast<int64_t>(r) * 3 - 1) << r;
    ASSERT_EQ(small[r], Small(r)) << r;
    ASSERT_EQ(flag[r], Flag(r) ? 1 : 0) << r;
    ASSERT_EQ(ts[r], static_cast<double>(Ts(r))) << r;
    ASSERT_EQ(reward[r], Reward(r)) << r;
    ASSERT_EQ(note[r], Note(r)) << r;
    ASSERT_EQ(state[r].size(), 3u);
    for (int j = 0; j < 3; ++j) ASSERT_EQ(state[r][j], static_cast<double>(State(r, j)));
    ASSERT_EQ(var[r], Var(r).value_or(std::vector<int64_t>{})) << r;
  }
}

TEST(ParquetWriter, MixedColumnsReadBackWithParquetFile) {
  for (uint64_t rows : {0, 1, 7, 8, 9, 250, 1001}) {
    SCOPED_TRACE(rows);
    CheckMixedWithParquetFile(WriteMixed(rows, 100), rows, (rows + 99) / 100);
  }
}

TEST(ParquetWriter, ReadColumnRowsSlicesAcrossRowGroups) {
  const uint64_t rows = 1001;
  auto bytes = WriteMixed(rows, 100);
  MemoryShardSource src("mixed.parquet", bytes);
  ParquetFile f = Ok(ParquetFile::Open(src));
  for (auto [first, count] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 0}, {0, 1}, {99, 2}, {150, 400}, {1000, 1}, {0, 1001}}) {
    SCOPED_TRACE(std::to_string(first) + "+" + std::to_string(count));
    auto note = Ok(f.ReadColumnRows("note", first, count));
    EXPECT_FALSE(note.list);
    EXPECT_EQ(note.values.num_levels, count);
    size_t k = 0;
    for (uint64_t i = 0; i < count; ++i) {
      const auto want = Note(first + i);
      ASSERT_EQ(note.values.def[i] == 1, want.has_value());
      if (want) {
        ASSERT_EQ(note.values.strings[k++], *want);
      }
    }
    EXPECT_EQ(k, note.values.strings.size());
    auto var = Ok(f.ReadColumnRows("var", first, count));
    EXPECT_TRUE(var.list);
    EXPECT_EQ(var.element_def, 2u);
    EXPECT_EQ(var.leaf_path, "var.list.element");
    std::vector<int64_t> want_values;
    uint64_t starts = 0;
    for (uint64_t i = 0; i < count; ++i) {
      for (int64_t v : Var(first + i).value_or(std::vector<int64_t>{})) want_values.push_back(v);
    }
    for (uint32_t r : var.values.rep) starts += r == 0;
    EXPECT_EQ(starts, count);
    EXPECT_EQ(var.values.ints, want_values);
  }
  auto past = f.ReadColumnRows("index", 1000, 2);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), Code::kInvalidArgument);
  EXPECT_NE(past.status().message().find("past the end"), std::string::npos);
  EXPECT_EQ(f.ReadColumnRows("nope", 0, 1).status().code(), Code::kNotFound);
}

// The schema of a LeRobot episode: everything fixed-width, no nulls.
std::vector<WriterColumn> FixedSchema() {
  std::vector<WriterColumn> cols;
  cols.push_back(ListCol("action", parquet::kFloat, 6));
  cols.push_back(ListCol("obs", parquet::kDouble, 1));
  cols.push_back(ListCol("empty", parquet::kInt64, 0));
  cols.push_back(ListCol("bools", parquet::kBoolean, 13));
  cols.push_back(Col("done", parquet::kBoolean));
  cols.push_back(Col("timestamp", parquet::kFloat));
  cols.push_back(Col("index", parquet::kInt64));
  cols.push_back(Col("req", parquet::kInt32, false));
  return cols;
}

Result<ColumnValues> FixedColumn(const WriterColumn& col, uint64_t rows, uint64_t seed) {
  ColumnValues cv;
  const parquet::LeafShape shape = parquet::WriterLeafShape(col);
  for (uint64_t r = 0; r < rows; ++r) {
    const uint32_t k = col.list ? *col.fixed_length : 1;
    if (k == 0) {
      cv.def.push_back(1);
      cv.rep.push_back(0);
      ++cv.num_levels;
      continue;
    }
    for (uint32_t j = 0; j < k; ++j) {
      if (shape.max_def > 0) cv.def.push_back(shape.max_def);
      if (shape.max_rep > 0) cv.rep.push_back(j == 0 ? 0 : 1);
      ++cv.num_levels;
      const uint64_t x = (r * 2654435761u + j * 97 + seed) % 100003;
      if (col.type == parquet::kFloat || col.type == parquet::kDouble) {
        cv.doubles.push_back(static_cast<float>(x) / 7);
      } else if (col.type == parquet::kBoolean) {
        cv.ints.push_back(x % 2);
      } else {
        cv.ints.push_back(static_cast<int64_t>(x * seed) - 5);
      }
    }
  }
  return cv;
}

TEST(ParquetWriter, ComputedSizeEqualsWrittenSize) {
  const auto cols = FixedSchema();
  for (uint64_t group : {1000, 100}) {
    parquet::WriterOptions opt;
    opt.row_group_rows = group;
    opt.key_value_metadata = {{"huggingface", std::string(300, 'x')}};
    for (uint64_t rows : {0, 1, 2, 7, 8, 9, 15, 16, 17, 99, 100, 101, 127, 128, 999, 1000, 1001,
                          1999, 2500, 8191, 8193, 16385}) {
      SCOPED_TRACE(std::to_string(group) + " rows " + std::to_string(rows));
      const uint64_t size = Ok(parquet::ParquetFileSize(cols, rows, opt));
      for (uint64_t seed : {1, 12345}) {
        auto bytes = Ok(parquet::WriteParquetFile(
            cols, rows, opt, [&](size_t c) { return FixedColumn(cols[c], rows, seed); }));
        ASSERT_EQ(bytes.size(), size);
      }
    }
  }
}

TEST(ParquetWriter, SizeOfDataDependentColumnsNeedsABuild) {
  for (const auto& col :
       {Col("s", parquet::kByteArray), ListCol("l", parquet::kFloat, std::nullopt)}) {
    auto r = parquet::ParquetFileSize({col}, 10, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kNotSupported);
    EXPECT_NE(r.status().message().find("build the file"), std::string::npos);
    EXPECT_NE(r.status().message().find("column " + col.name), std::string::npos);
  }
}

TEST(ParquetWriter, RefusesDataThatDoesNotFitTheSchema) {
  WriterColumn fixed = ListCol("v", parquet::kFloat, 2);
  auto expect_bad = [](const std::vector<WriterColumn>& cols, uint64_t rows, ColumnValues cv,
                       const std::string& says) {
    auto r = parquet::WriteParquetFile(cols, rows, {}, [&](size_t) { return cv; });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("column " + cols[0].name), std::string::npos);
  };
  // Three elements in a row of a fixed_length 2 list.
  expect_bad({fixed}, 1, ColumnValues{{3, 3, 3}, {0, 1, 1}, 3, {}, {1, 2, 3}, {}}, "exactly 2");
  // A null element.
  expect_bad({fixed}, 1, ColumnValues{{3, 2}, {0, 1}, 2, {}, {1}, {}}, "exactly 2");
  // Rows of the column and of the file differ.
  expect_bad({fixed}, 2, ColumnValues{{3, 3}, {0, 1}, 2, {}, {1, 2}, {}}, "rows");
  // Fewer values than present levels.
  WriterColumn flat = Col("f", parquet::kInt64);
  expect_bad({flat}, 2, ColumnValues{{1, 1}, {}, 2, {5}, {}, {}}, "values");
  // A level above the maximum.
  expect_bad({flat}, 1, ColumnValues{{2}, {}, 1, {5}, {}, {}}, "maximum");
  // Levels missing.
  expect_bad({flat}, 1, ColumnValues{{}, {}, 1, {5}, {}, {}}, "level counts");
  // The supplier's own error passes through.
  auto r = parquet::WriteParquetFile({flat}, 1, {}, [](size_t) -> Result<ColumnValues> {
    return Status::Corruption("source broken");
  });
  EXPECT_EQ(r.status().message(), "source broken");
}

// --- the Node readers -----------------------------------------------------------------------

std::string ParquetMjs() { return std::string(PACKFS_SOURCE_DIR) + "/scripts/lerobot-parquet"; }

bool NodeReady() {
  if (!testing::HasCommand("node")) return false;
  if (testing::Sh("test -d '" + ParquetMjs() + "/node_modules'").exit_code == 0) return true;
  if (!testing::HasCommand("npm")) return false;
  return testing::Sh("npm ci --silent --no-audit --no-fund --prefix '" + ParquetMjs() + "'")
             .exit_code == 0;
}

TEST(ParquetWriter, NodeReadersReadEveryValue) {
  if (!NodeReady()) GTEST_SKIP() << "node or scripts/lerobot-parquet/node_modules unavailable";
  testing::TempDir tmp;
  const uint64_t rows = 230;
  const std::string path = tmp / "mixed.parquet";
  auto bytes = WriteMixed(rows, 100);
  testing::WriteFile(path, std::string(bytes.begin(), bytes.end()));

  auto run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "read", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto json = nlohmann::json::parse(run.out);
  ASSERT_EQ(json["rows"].size(), rows);
  for (uint64_t r = 0; r < rows; ++r) {
    const auto& row = json["rows"][r];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["index"], static_cast<int64_t>(r) * 3 - 1);
    EXPECT_EQ(row["small"], Small(r));
    EXPECT_EQ(row["flag"], Flag(r));
    EXPECT_EQ(row["ts"].get<double>(), static_cast<double>(Ts(r)));
    if (Reward(r)) {
      EXPECT_EQ(row["reward"].get<double>(), *Reward(r));
    } else {
      EXPECT_TRUE(row["reward"].is_null());
    }
    if (Note(r)) {
      EXPECT_EQ(row["note"], *Note(r));
    } else {
      EXPECT_TRUE(row["note"].is_null());
    }
    ASSERT_EQ(row["state"].size(), 3u);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(row["state"][j].get<double>(), State(r, j));
    if (Var(r)) {
      EXPECT_EQ(row["var"].get<std::vector<int64_t>>(), *Var(r));
    } else {
      EXPECT_TRUE(row["var"].is_null());
    }
  }

  run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "schema", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["num_rows"], rows);
  EXPECT_EQ(json["metadata"]["huggingface"], "{\"x\": 1}");
  const auto& f = json["fields"];
  EXPECT_EQ(f["index"], "Int64");
  EXPECT_EQ(f["small"], "Int16");
  EXPECT_EQ(f["flag"], "Bool");
  EXPECT_EQ(f["ts"], "Float32");
  EXPECT_EQ(f["reward"], "Float64");
  EXPECT_EQ(f["note"], "Utf8");
  EXPECT_EQ(f["state"], "List<Float32>");
  EXPECT_EQ(f["var"], "List<Int64>");
  EXPECT_EQ(json["rows_read"], rows);

  run = testing::Run({"node", ParquetMjs() + "/parquet.mjs", "pages", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json = nlohmann::json::parse(run.out);
  ASSERT_EQ(json["row_groups"].size(), 3u);
  for (const auto& rg : json["row_groups"]) {
    for (const auto& c : rg["columns"]) {
      EXPECT_EQ(c["codec"], "UNCOMPRESSED");
      ASSERT_EQ(c["pages"].size(), 1u);
      EXPECT_EQ(c["pages"][0]["type"], "DATA_PAGE");
      EXPECT_EQ(c["pages"][0]["encoding"], "PLAIN");
    }
  }
}

}  // namespace
}  // namespace packfs
