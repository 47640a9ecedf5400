// The Parquet reader against files of other writers (tests/fixtures/parquet/, made by
// scripts/lerobot-parquet/make-fixtures.mjs with hyparquet-writer and parquet-wasm): DATA_PAGE and
// DATA_PAGE_V2, codecs SNAPPY/GZIP/ZSTD/LZ4_RAW/UNCOMPRESSED, PLAIN, dictionary, RLE booleans,
// DELTA_* and BYTE_STREAM_SPLIT. Every value of every column is compared with the function of the
// row number the generator wrote (the generator checked the same values with hyparquet's reader).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/lerobot/parquet_reader.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

// --- the generator's table (keep in step with COLUMNS in make-fixtures.mjs) ---
constexpr int64_t kRows = 300;
const char* const kTasks[] = {
    "Pick the orange cube and place it in the box",
    "Pick the orange cube and place it on the plate",
    "Push the red block to the left",
};

int64_t Index(int64_t r) { return r; }
int64_t EpisodeIndex(int64_t r) { return r / 100; }
int64_t FrameIndex(int64_t r) { return r % 100; }
double Timestamp(int64_t r) { return static_cast<float>(static_cast<double>(r % 100) / 30); }
int64_t Ns(int64_t r) { return (r % 2 ? -1 : 1) * r * 1000000007; }
int64_t Offset(int64_t r) { return r % 17 - 8; }
std::optional<double> Reward(int64_t r) {
  if (r % 7 == 3) return std::nullopt;
  return static_cast<double>(r) * 1.1 / 7 - 3;
}
std::string Task(int64_t r) { return kTasks[r % 3]; }
std::string Path(int64_t r) {
  std::string n = std::to_string(r);
  return "videos/observation.images.front/chunk-000/file-" + std::string(3 - n.size(), '0') + n +
         ".mp4";
}
std::optional<std::string> Note(int64_t r) {
  if (r % 5 == 0) return std::nullopt;
  if (r % 5 == 1) return std::string();
  return "note " + std::to_string(r);
}
int64_t Done(int64_t r) { return r % 100 == 99; }
std::vector<double> State(int64_t r) {
  std::vector<double> v;
  if (r % 50 == 7) return v;
  for (int j = 0; j < 6; ++j) {
    v.push_back(static_cast<float>(static_cast<double>(r) * 0.5 + j * 0.125 - 1));
  }
  return v;
}

template <typename T>
T Ok(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

template <typename T, typename F>
void ExpectColumn(const std::vector<std::optional<T>>& got, F want, const std::string& what) {
  ASSERT_EQ(got.size(), static_cast<size_t>(kRows)) << what;
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(got[r], std::optional<T>(want(r))) << what << ", row " << r;
  }
}

class WriterFixtureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(WriterFixtureTest, EveryValueAsWritten) {
  const std::string name = GetParam();
  MemoryShardSource src(name, testing::ReadBytes(testing::FixturesDir() + "/parquet/" + name));
  auto f = Ok(ParquetFile::Open(src));
  EXPECT_EQ(f.num_rows(), static_cast<uint64_t>(kRows));
  EXPECT_NE(f.created_by().find("packfs fixture generator"), std::string::npos);
  EXPECT_EQ(f.column_paths(),
            (std::vector<std::string>{"index", "episode_index", "frame_index", "timestamp", "ns",
                                      "offset", "reward", "task", "path", "note", "done",
                                      "observation.state.list.element"}));

  ExpectColumn(Ok(f.ReadInt64("index")), Index, name + " index");
  ExpectColumn(Ok(f.ReadInt64("episode_index")), EpisodeIndex, name + " episode_index");
  ExpectColumn(Ok(f.ReadInt64("frame_index")), FrameIndex, name + " frame_index");
  ExpectColumn(Ok(f.ReadDouble("timestamp")), Timestamp, name + " timestamp");
  ExpectColumn(Ok(f.ReadInt64("ns")), Ns, name + " ns");
  ExpectColumn(Ok(f.ReadInt64("offset")), Offset, name + " offset");
  ExpectColumn(Ok(f.ReadDouble("reward")), Reward, name + " reward");
  ExpectColumn(Ok(f.ReadString("task")), Task, name + " task");
  ExpectColumn(Ok(f.ReadString("path")), Path, name + " path");
  ExpectColumn(Ok(f.ReadString("note")), Note, name + " note");
  ExpectColumn(Ok(f.ReadInt64("done")), Done, name + " done");
  auto state = Ok(f.ReadDoubleList("observation.state"));
  ASSERT_EQ(state.size(), static_cast<size_t>(kRows));
  for (int64_t r = 0; r < kRows; ++r) EXPECT_EQ(state[r], State(r)) << name << ", row " << r;

  // The typed readers refuse what they do not hold, whatever the encoding.
  EXPECT_EQ(f.ReadDouble("index").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(f.ReadInt64List("observation.state").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(f.ReadStringList("observation.state").status().code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Writers, WriterFixtureTest,
    ::testing::Values("hyparquet-v2-snappy.parquet", "hyparquet-v2-delta-uncompressed.parquet",
                      "hyparquet-v2-split-gzip.parquet", "hyparquet-v2-delta-zstd.parquet",
                      "wasm-v1-delta-zstd.parquet", "wasm-v1-plain-gzip.parquet",
                      "wasm-v1-dict-lz4raw.parquet", "wasm-v2-dict-zstd.parquet",
                      "wasm-v2-delta-lz4raw.parquet", "wasm-v2-split-snappy.parquet",
                      "wasm-v2-fallback-uncompressed.parquet"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      std::string s = info.param;
      s = s.substr(0, s.find('.'));
      for (char& c : s) c = (c == '-') ? '_' : c;
      return s;
    });

// Damage to v2 pages, delta streams and compressed pages of real files: every byte changed in
// turn (a stride keeps the sanitized run short). Errors must name the file; crashes, hangs and
// out-of-bounds reads (under ASan) fail; flat columns keep one entry per row.
void FlipBytes(const char* name, size_t stride) {
  const auto good = testing::ReadBytes(testing::FixturesDir() + "/parquet/" + name);
  size_t opened = 0;
  for (size_t i = 4; i < good.size(); i += stride) {
    auto bytes = good;
    bytes[i] ^= (i % 2 == 0) ? 0xff : 0x04;
    MemoryShardSource src("flipped.parquet", std::move(bytes));
    auto f = ParquetFile::Open(src);
    if (!f.ok()) continue;
    ++opened;
    auto check = [&](const Status& st, size_t size, const std::string& p) {
      if (st.ok()) {
        EXPECT_EQ(size, f->num_rows()) << name << " byte " << i << ", column " << p;
      } else {
        EXPECT_NE(st.message().find("flipped.parquet"), std::string::npos)
            << name << " byte " << i << ": " << st.message();
      }
    };
    for (const auto& p : f->column_paths()) {
      auto a = f->ReadInt64(p);
      check(a.status(), a.ok() ? a->size() : 0, p);
      auto d = f->ReadDouble(p);
      check(d.status(), d.ok() ? d->size() : 0, p);
      auto s = f->ReadString(p);
      check(s.status(), s.ok() ? s->size() : 0, p);
    }
    auto l = f->ReadDoubleList("observation.state");
    check(l.status(), l.ok() ? l->size() : 0, "observation.state");
  }
  EXPECT_GT(opened, 0u);
}

TEST(ParquetInteropTest, FlippedBytesInV2DeltaFile) {
  FlipBytes("hyparquet-v2-delta-uncompressed.parquet", 11);
}
TEST(ParquetInteropTest, FlippedBytesInZstdFile) { FlipBytes("wasm-v2-dict-zstd.parquet", 13); }
TEST(ParquetInteropTest, FlippedBytesInGzipFile) {
  FlipBytes("hyparquet-v2-split-gzip.parquet", 13);
}
TEST(ParquetInteropTest, FlippedBytesInLz4RawFile) {
  FlipBytes("wasm-v2-delta-lz4raw.parquet", 13);
}

}  // namespace
}  // namespace packfs
