// Tests of the Parquet reader over files written by LeRobot (pyarrow / parquet-cpp-arrow 22,
// SNAPPY, dictionary encoding) and over byte-patched or hand-built files for every error path:
// truncation, bad magic, hostile footer lengths, missing columns, unsupported codecs and pages,
// lying DATA_PAGE_V2 and compressed-page sizes, decompression bombs, damaged delta streams.
// (Files of other writers: parquet_interop_test.cc.)
#include "core/lerobot/parquet_reader.h"

#include <gtest/gtest.h>
#include <libdeflate.h>
#include <lz4.h>
#include <snappy.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
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
    EXPECT_EQ(from, (std::vector<double>{0.0, 12.433333333333334, 24.9, 37.3}));
    EXPECT_EQ(to, (std::vector<double>{12.433333333333334, 24.9, 37.3, 49.733333333333334}));
  }
  auto tasks = Ok(f.ReadStringList("tasks"));
  ASSERT_EQ(tasks.size(), 4u);
  for (const auto& t : tasks) {
    EXPECT_EQ(t, std::vector<std::string>{"Pick the orange cube and place it in the box"});
  }
}

TEST(ParquetReaderTest, TasksTable) {
  auto src = Load("meta/tasks.parquet");
  auto f = Ok(ParquetFile::Open(src));
  EXPECT_EQ(f.num_rows(), 1u);
  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("task_index"))), (std::vector<int64_t>{0}));
  auto ep = Load(kEpisodes);
  auto tasks = Ok(Ok(ParquetFile::Open(ep)).ReadStringList("tasks"));
  // The task text is the pandas index column of tasks.parquet; it matches the episodes' tasks.
  EXPECT_EQ(f.column_paths(), (std::vector<std::string>{"task_index", "__index_level_0__"}));
  auto text = NoNulls(Ok(f.ReadString("__index_level_0__")));
  EXPECT_EQ(text, std::vector<std::string>{tasks[0][0]});
  EXPECT_EQ(text[0], "Pick the orange cube and place it in the box");
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


// --- Files written byte for byte: one INT64 column "x" in one DATA_PAGE. ---

// Thrift compact protocol writer (only what the footer and page header need).
class ThriftWriter {
 public:
  std::vector<uint8_t> bytes;

  void Field(int16_t id, uint8_t type) {
    const int delta = id - last_;
    if (delta > 0 && delta <= 15) {
      bytes.push_back(static_cast<uint8_t>(delta << 4 | type));
    } else {
      bytes.push_back(type);
      Varint(Zig(id));
    }
    last_ = id;
  }
  void I32(int16_t id, int64_t v) { Field(id, 5), Varint(Zig(v)); }
  void I64(int16_t id, int64_t v) { Field(id, 6), Varint(Zig(v)); }
  void Str(int16_t id, const std::string& s) { Field(id, 8), Varint(s.size()), Raw(s); }
  void BeginStruct(int16_t id) { Field(id, 12), Begin(); }
  void Begin() { stack_.push_back(last_), last_ = 0; }  // a struct (also a list element)
  void End() { bytes.push_back(0), last_ = stack_.back(), stack_.pop_back(); }
  void List(int16_t id, uint8_t elem_type, size_t n) {
    Field(id, 9);
    bytes.push_back(static_cast<uint8_t>(n << 4 | elem_type));  // n < 15 here
  }
  void Varint(uint64_t v) {
    while (v >= 0x80) bytes.push_back(static_cast<uint8_t>(v | 0x80)), v >>= 7;
    bytes.push_back(static_cast<uint8_t>(v));
  }
  void Raw(const std::string& s) { bytes.insert(bytes.end(), s.begin(), s.end()); }

 private:
  static uint64_t Zig(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  }
  int16_t last_ = 0;
  std::vector<int16_t> stack_;
};

struct TinySpec {
  std::vector<std::optional<int64_t>> values = {5, -7, 1LL << 40};
  bool optional = false;
  int32_t codec = 0;        // UNCOMPRESSED
  int32_t page_type = 0;    // DATA_PAGE
  int32_t encoding = 0;     // PLAIN
  bool compress = false;    // compress the page body (v2: the values) with `codec`
  int32_t type = 2;         // INT64; BYTE_ARRAY (6) for the string encodings
  std::optional<std::string> raw_values;  // the encoded values, instead of PLAIN `values`
  // Lies in the page header: added to the declared uncompressed size / v2 definition level length.
  int64_t uncompressed_delta = 0;
  int64_t def_len_delta = 0;
  bool is_compressed = true;  // v2 only
};

std::string Compress(int32_t codec, const std::string& in) {
  std::string out;
  if (codec == 1) {
    snappy::Compress(in.data(), in.size(), &out);
  } else if (codec == 2) {
    auto* c = libdeflate_alloc_compressor(6);
    out.resize(libdeflate_gzip_compress_bound(c, in.size()));
    out.resize(libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size()));
    libdeflate_free_compressor(c);
  } else if (codec == 6) {
    out.resize(ZSTD_compressBound(in.size()));
    out.resize(ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3));
  } else if (codec == 7) {
    out.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
    out.resize(static_cast<size_t>(LZ4_compress_default(in.data(), out.data(),
                                                        static_cast<int>(in.size()),
                                                        static_cast<int>(out.size()))));
  } else {
    out = in;
  }
  return out;
}

std::vector<uint8_t> TinyParquet(const TinySpec& spec) {
  const bool v2 = spec.page_type == 3;
  std::string levels;
  if (spec.optional) {  // definition levels: one RLE run of length 1 per value, bit width 1
    for (const auto& v : spec.values) levels += std::string{2, static_cast<char>(v ? 1 : 0)};
    if (!v2) {
      const uint32_t n = static_cast<uint32_t>(levels.size());
      levels.insert(0, reinterpret_cast<const char*>(&n), 4);
    }
  }
  std::string values;
  if (spec.raw_values) {
    values = *spec.raw_values;
  } else {
    for (const auto& v : spec.values) {
      if (v) values.append(reinterpret_cast<const char*>(&*v), 8);
    }
  }
  std::string body;
  size_t uncompressed = levels.size() + values.size();
  if (v2) {  // levels stay uncompressed
    body = levels + (spec.compress ? Compress(spec.codec, values) : values);
  } else {
    body = levels + values;
    if (spec.compress) body = Compress(spec.codec, body);
  }
  ThriftWriter page;
  page.Begin();
  page.I32(1, spec.page_type);
  page.I32(2, static_cast<int64_t>(uncompressed) + spec.uncompressed_delta);
  page.I32(3, static_cast<int64_t>(body.size()));
  page.BeginStruct(v2 ? 8 : 5);
  page.I32(1, static_cast<int64_t>(spec.values.size()));
  if (v2) {  // DataPageHeaderV2: num_nulls, num_rows, encoding, level lengths, is_compressed
    int64_t nulls = 0;
    for (const auto& v : spec.values) nulls += !v;
    page.I32(2, nulls), page.I32(3, static_cast<int64_t>(spec.values.size()));
    page.I32(4, spec.encoding);
    page.I32(5, static_cast<int64_t>(levels.size()) + spec.def_len_delta), page.I32(6, 0);
    if (!spec.is_compressed) page.Field(7, 2);  // compact protocol: false is type 2
  } else {
    page.I32(2, spec.encoding), page.I32(3, 3), page.I32(4, 3);
  }
  page.End();
  page.End();

  std::vector<uint8_t> file = {'P', 'A', 'R', '1'};
  file.insert(file.end(), page.bytes.begin(), page.bytes.end());
  file.insert(file.end(), body.begin(), body.end());
  const int64_t chunk_size = static_cast<int64_t>(page.bytes.size() + body.size());

  ThriftWriter f;
  f.Begin();
  f.I32(1, 1);
  f.List(2, 12, 2);
  f.Begin(), f.Str(4, "schema"), f.I32(5, 1), f.End();
  f.Begin(), f.I32(1, spec.type), f.I32(3, spec.optional ? 1 : 0), f.Str(4, "x"), f.End();
  f.I64(3, static_cast<int64_t>(spec.values.size()));
  f.List(4, 12, 1);
  f.Begin();
  f.List(1, 12, 1);
  f.Begin();
  f.I64(2, 4);
  f.BeginStruct(3);
  f.I32(1, spec.type);
  f.List(2, 5, 1), f.Varint(0);
  f.List(3, 8, 1), f.Varint(1), f.Raw("x");
  f.I32(4, spec.codec);
  f.I64(5, static_cast<int64_t>(spec.values.size()));
  f.I64(6, chunk_size), f.I64(7, chunk_size), f.I64(9, 4);
  f.End();
  f.End();
  f.I64(2, chunk_size), f.I64(3, static_cast<int64_t>(spec.values.size()));
  f.End();
  f.Str(6, "packfs test");
  f.End();
  file.insert(file.end(), f.bytes.begin(), f.bytes.end());
  const uint32_t len = static_cast<uint32_t>(f.bytes.size());
  file.insert(file.end(), reinterpret_cast<const uint8_t*>(&len),
              reinterpret_cast<const uint8_t*>(&len) + 4);
  for (char c : std::string("PAR1")) file.push_back(static_cast<uint8_t>(c));
  return file;
}

Result<std::vector<std::optional<int64_t>>> ReadTiny(const TinySpec& spec,
                                                     const ParquetOptions& options = {}) {
  MemoryShardSource src("tiny.parquet", TinyParquet(spec));
  PACKFS_ASSIGN_OR_RETURN(ParquetFile f, ParquetFile::Open(src, options));
  return f.ReadInt64("x");
}

Result<std::vector<std::optional<std::string>>> ReadTinyStrings(const TinySpec& spec) {
  MemoryShardSource src("tiny.parquet", TinyParquet(spec));
  PACKFS_ASSIGN_OR_RETURN(ParquetFile f, ParquetFile::Open(src));
  return f.ReadString("x");
}

TEST(ParquetReaderTest, HandWrittenFiles) {
  TinySpec plain;
  EXPECT_EQ(Ok(ReadTiny(plain)), plain.values);
  TinySpec opt;
  opt.optional = true;
  opt.values = {1, std::nullopt, 3, std::nullopt};
  EXPECT_EQ(Ok(ReadTiny(opt)), opt.values);
  for (int32_t page_type : {0, 3}) {
    for (int32_t codec : {1, 2, 6, 7}) {
      TinySpec c;
      c.page_type = page_type;
      c.codec = codec;
      c.compress = true;
      c.optional = true;
      c.values = {std::nullopt, 42, 43, std::nullopt, -1};
      EXPECT_EQ(Ok(ReadTiny(c)), c.values) << "page type " << page_type << ", codec " << codec;
    }
  }
  TinySpec raw_v2;  // a v2 page may leave its values uncompressed under any codec
  raw_v2.page_type = 3;
  raw_v2.codec = 6;
  raw_v2.is_compressed = false;
  raw_v2.optional = true;
  raw_v2.values = {7, std::nullopt};
  EXPECT_EQ(Ok(ReadTiny(raw_v2)), raw_v2.values);
}

void ExpectUnsupported(const TinySpec& spec, const std::string& needle) {
  auto r = ReadTiny(spec);
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.status().code(), Code::kNotSupported) << r.status().ToString();
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("tiny.parquet"), std::string::npos) << m;
  EXPECT_NE(m.find("column x"), std::string::npos) << m;
  EXPECT_NE(m.find(needle), std::string::npos) << m;
}

TEST(ParquetReaderTest, UnsupportedFeaturesAreClearErrors) {
  for (auto [codec, name] : {std::pair{3, "LZO"}, {4, "BROTLI"}, {5, "LZ4"}, {9, "#9"}}) {
    TinySpec s;
    s.codec = codec;
    ExpectUnsupported(s, name);
  }
  TinySpec strings_on_ints;  // DELTA_BYTE_ARRAY holds byte arrays, not INT64
  strings_on_ints.encoding = 7;
  ExpectUnsupported(strings_on_ints, "DELTA_BYTE_ARRAY for INT64");
  TinySpec alp;
  alp.encoding = 10;
  ExpectUnsupported(alp, "encoding #10");
  TinySpec dict;  // a dictionary-encoded page needs a dictionary page first
  dict.encoding = 8;
  auto r = ReadTiny(dict);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("without a dictionary"), std::string::npos);
}

template <typename T>
void ExpectFailure(const Result<T>& r, Code code, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("tiny.parquet"), std::string::npos) << m;
  EXPECT_NE(m.find(needle), std::string::npos) << m;
}

TEST(ParquetReaderTest, LyingV2PagesAndCompressedSizes) {
  TinySpec v2;
  v2.page_type = 3;
  v2.optional = true;
  v2.values = {1, std::nullopt, 3, 4};
  EXPECT_EQ(Ok(ReadTiny(v2)), v2.values);
  TinySpec long_levels = v2;  // definition levels said to reach past the page
  long_levels.def_len_delta = 1000;
  ExpectFailure(ReadTiny(long_levels), Code::kCorruption, "overrun the page");
  TinySpec short_levels = v2;  // definition levels cut short
  short_levels.def_len_delta = -3;
  ExpectFailure(ReadTiny(short_levels), Code::kCorruption, "definition levels are truncated");
  TinySpec no_levels = v2;
  no_levels.def_len_delta = -8;
  ExpectFailure(ReadTiny(no_levels), Code::kCorruption, "definition levels are truncated");
  TinySpec cut_values = v2;  // PLAIN values cut short
  cut_values.raw_values = std::string(20, '\0');
  ExpectFailure(ReadTiny(cut_values), Code::kCorruption, "overrun the page");

  // The declared uncompressed size one byte off, either way, in v1 and v2 pages of each codec.
  for (int32_t page_type : {0, 3}) {
    for (auto [codec, name] : {std::pair{1, "SNAPPY"}, {2, "GZIP"}, {6, "ZSTD"}, {7, "LZ4_RAW"}}) {
      for (int64_t delta : {-1, 1}) {
        TinySpec lie = v2;
        lie.page_type = page_type;
        lie.codec = codec;
        lie.compress = true;
        lie.uncompressed_delta = delta;
        ExpectFailure(ReadTiny(lie), Code::kCorruption, name);
      }
      TinySpec garbage = v2;  // not the codec's format at all
      garbage.page_type = page_type;
      garbage.codec = codec;
      garbage.raw_values = std::string(64, '\x5a');
      ExpectFailure(ReadTiny(garbage), Code::kCorruption, name);
    }
  }
}

TEST(ParquetReaderTest, DecompressionBombsAreRefusedBeforeAllocating) {
  // A page declaring ~2 GiB from a few dozen compressed bytes: no codec expands that far.
  for (auto [codec, name] : {std::pair{1, "SNAPPY"}, {2, "GZIP"}, {6, "ZSTD"}, {7, "LZ4_RAW"}}) {
    for (int32_t page_type : {0, 3}) {
      TinySpec bomb;
      bomb.page_type = page_type;
      bomb.codec = codec;
      bomb.compress = true;
      bomb.uncompressed_delta = INT32_MAX - 24;
      ExpectFailure(ReadTiny(bomb), Code::kCorruption, "decompression bomb");
    }
  }
  // A real zstd page of 4 MiB of zeros (a ratio zstd does reach) against a 1 MiB page limit.
  TinySpec zeros;
  zeros.codec = 6;
  zeros.compress = true;
  zeros.values.assign(512 * 1024, 0);
  EXPECT_EQ(Ok(ReadTiny(zeros)).size(), zeros.values.size());
  ParquetOptions small;
  small.max_page_bytes = 1 << 20;
  ExpectFailure(ReadTiny(zeros, small), Code::kNotSupported, "over the limit of 1048576 bytes");
  zeros.page_type = 3;
  ExpectFailure(ReadTiny(zeros, small), Code::kNotSupported, "over the limit of 1048576 bytes");
}

std::string Uleb(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>(v | 0x80);
  return s + static_cast<char>(v);
}
std::string Zigzag(int64_t v) {
  return Uleb((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

// A DELTA_BINARY_PACKED stream of up to 129 values: one block of 4 miniblocks of 32, one bit
// width for all. `count_delta` makes the header lie about the value count.
std::string DeltaStream(const std::vector<int64_t>& v, int64_t count_delta = 0) {
  std::string s = Uleb(128) + Uleb(4) + Uleb(v.size() + count_delta) + Zigzag(v.empty() ? 0 : v[0]);
  if (v.size() <= 1) return s;
  std::vector<uint64_t> d;
  int64_t min = INT64_MAX;
  for (size_t i = 1; i < v.size(); ++i) {
    d.push_back(static_cast<uint64_t>(v[i]) - static_cast<uint64_t>(v[i - 1]));
    min = std::min(min, static_cast<int64_t>(d.back()));
  }
  uint32_t w = 0;
  for (auto& x : d) {
    x -= static_cast<uint64_t>(min);
    while (w < 64 && (x >> w) != 0) ++w;
  }
  const size_t used = (d.size() + 31) / 32;
  s += Zigzag(min);
  for (size_t m = 0; m < 4; ++m) s += static_cast<char>(m < used ? w : 0);
  std::string bits(used * 32 * w / 8, '\0');
  for (size_t i = 0; i < d.size(); ++i) {
    for (uint32_t b = 0; b < w; ++b) {
      const size_t bit = i * w + b;
      if ((d[i] >> b) & 1) bits[bit / 8] = static_cast<char>(bits[bit / 8] | (1 << (bit % 8)));
    }
  }
  return s + bits;
}

TEST(ParquetReaderTest, DamagedDeltaStreams) {
  TinySpec delta;
  delta.encoding = 5;
  delta.values = {5, -7, int64_t{1} << 40, INT64_MIN, INT64_MAX, 0};
  std::vector<int64_t> plain;
  for (const auto& v : delta.values) plain.push_back(*v);
  delta.raw_values = DeltaStream(plain);
  EXPECT_EQ(Ok(ReadTiny(delta)), delta.values);  // deltas that wrap around

  TinySpec more = delta;
  more.raw_values = DeltaStream(plain, 1);
  ExpectFailure(ReadTiny(more), Code::kCorruption, "holds 7 values where the page has 6");
  TinySpec huge = delta;
  huge.raw_values = DeltaStream(plain, int64_t{1} << 40);
  ExpectFailure(ReadTiny(huge), Code::kCorruption, "values where the page has 6");
  TinySpec layout = delta;
  layout.raw_values = Uleb(100) + DeltaStream(plain).substr(2);
  ExpectFailure(ReadTiny(layout), Code::kCorruption, "bad block layout");
  TinySpec wide = delta;
  wide.values = {5, 6, 8};
  wide.raw_values = DeltaStream({5, 6, 8});
  (*wide.raw_values)[6] = 65;  // after the header (5 bytes) and the min delta (1 byte)
  ExpectFailure(ReadTiny(wide), Code::kCorruption, "65-bit");
  TinySpec cut = delta;
  cut.raw_values = DeltaStream(plain);
  cut.raw_values->pop_back();
  ExpectFailure(ReadTiny(cut), Code::kCorruption, "miniblock is truncated");
  TinySpec header = delta;
  header.raw_values = Uleb(128) + Uleb(4);
  ExpectFailure(ReadTiny(header), Code::kCorruption, "header is truncated");

  TinySpec strings;  // BYTE_ARRAY; `values` only sets the count
  strings.type = 6;
  strings.values = {0, 0};
  strings.encoding = 6;  // DELTA_LENGTH_BYTE_ARRAY
  strings.raw_values = DeltaStream({3, 1}) + "abcd";
  EXPECT_EQ(Ok(ReadTinyStrings(strings)),
            (std::vector<std::optional<std::string>>{"abc", "d"}));
  strings.raw_values = DeltaStream({3, 1000}) + "abcd";
  ExpectFailure(ReadTinyStrings(strings), Code::kCorruption, "1000 bytes overruns the page");
  strings.raw_values = DeltaStream({-1, 1}) + "abcd";
  ExpectFailure(ReadTinyStrings(strings), Code::kCorruption, "value of -1 bytes");
  strings.encoding = 7;  // DELTA_BYTE_ARRAY: prefix lengths, then suffixes
  strings.raw_values = DeltaStream({0, 2}) + DeltaStream({3, 1}) + "abcd";
  EXPECT_EQ(Ok(ReadTinyStrings(strings)),
            (std::vector<std::optional<std::string>>{"abc", "abd"}));
  strings.raw_values = DeltaStream({0, 5}) + DeltaStream({3, 1}) + "abcd";
  ExpectFailure(ReadTinyStrings(strings), Code::kCorruption, "prefix of 5 bytes");
  strings.raw_values = DeltaStream({1, 0}) + DeltaStream({3, 1}) + "abcd";
  ExpectFailure(ReadTinyStrings(strings), Code::kCorruption, "prefix of 1 bytes");

  TinySpec split;  // BYTE_STREAM_SPLIT needs exactly 8 bytes per INT64
  split.encoding = 9;
  split.raw_values = std::string(23, '\0');
  ExpectFailure(ReadTiny(split), Code::kCorruption, "BYTE_STREAM_SPLIT data of 23 bytes");
  split.raw_values = std::string(24, '\0');
  split.raw_values->at(3) = 1;  // stream 1 (bytes 3-5), value 0: byte 1 of the first value
  EXPECT_EQ(Ok(ReadTiny(split)), (std::vector<std::optional<int64_t>>{256, 0, 0}));
  TinySpec rle;  // RLE values are for booleans only
  rle.encoding = 3;
  ExpectFailure(ReadTiny(rle), Code::kNotSupported, "RLE for INT64");
}

Status OpenStatus(std::vector<uint8_t> bytes) {
  MemoryShardSource src("bad.parquet", std::move(bytes));
  auto f = ParquetFile::Open(src);
  if (!f.ok()) return f.status();
  return Status::OK();
}

TEST(ParquetReaderTest, TruncatedBadMagicAndHostileFooter) {
  const auto good = testing::ReadBytes(Fixture(kEpisodes));
  for (size_t keep : {size_t{0}, size_t{7}, size_t{12}, good.size() / 2, good.size() - 1}) {
    Status st = OpenStatus(std::vector<uint8_t>(good.begin(), good.begin() + keep));
    EXPECT_EQ(st.code(), Code::kCorruption) << keep;
    EXPECT_NE(st.message().find("bad.parquet"), std::string::npos) << st.message();
  }
  auto bad_magic = good;
  bad_magic[0] = 'X';
  Status st = OpenStatus(bad_magic);
  EXPECT_EQ(st.code(), Code::kCorruption);
  EXPECT_NE(st.message().find("PAR1"), std::string::npos) << st.message();

  const size_t len_at = good.size() - 8;
  for (uint32_t len : {0xffffffffu, static_cast<uint32_t>(good.size() - 11),
                       static_cast<uint32_t>(good.size() - 12), 0u, 1u}) {
    auto hostile = good;
    std::memcpy(&hostile[len_at], &len, 4);
    st = OpenStatus(hostile);
    EXPECT_FALSE(st.ok()) << len;
    EXPECT_NE(st.message().find("bad.parquet"), std::string::npos) << st.message();
  }
}

// Every single-byte change to a real file: open and read every column; errors are fine, crashes
// and out-of-bounds reads (under ASan) are not, and flat columns keep one entry per row.
TEST(ParquetReaderTest, EveryByteFlippedInTasksTable) {
  const auto good = testing::ReadBytes(Fixture("meta/tasks.parquet"));
  size_t opened = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    auto bytes = good;
    bytes[i] ^= (i % 2 == 0) ? 0xff : 0x01;
    MemoryShardSource src("flipped.parquet", std::move(bytes));
    auto f = ParquetFile::Open(src);
    if (!f.ok()) {
      EXPECT_NE(f.status().message().find("flipped.parquet"), std::string::npos)
          << "byte " << i << ": " << f.status().message();
      continue;
    }
    ++opened;
    for (const auto& p : f->column_paths()) {
      auto a = f->ReadInt64(p);
      if (a.ok()) {
        EXPECT_EQ(a->size(), f->num_rows());
      } else {
        EXPECT_NE(a.status().message().find("flipped.parquet"), std::string::npos)
            << "byte " << i << ", column " << p << ": " << a.status().message();
      }
      auto s = f->ReadString(p);
      if (s.ok()) {
        EXPECT_EQ(s->size(), f->num_rows());
      } else {
        EXPECT_NE(s.status().message().find("flipped.parquet"), std::string::npos)
            << "byte " << i << ", column " << p << ": " << s.status().message();
      }
    }
  }
  EXPECT_GT(opened, 0u);
}

// Inputs that once crashed the fuzz target (tests/fuzz/corpus/parquet/regress-*): each must be
// rejected or read cleanly.
TEST(ParquetReaderTest, FuzzRegressions) {
  const std::string dir = std::string(PACKFS_SOURCE_DIR) + "/tests/fuzz/corpus/parquet/";
  for (const char* name : {"regress-schema-overrun.parquet"}) {
    MemoryShardSource src(name, testing::ReadBytes(dir + name));
    auto f = ParquetFile::Open(src);
    if (!f.ok()) {
      EXPECT_NE(f.status().message().find(name), std::string::npos) << f.status().message();
      continue;
    }
    for (const auto& p : f->column_paths()) (void)f->ReadInt64(p);
  }
}

// A source that records which byte ranges were read (to prove unrequested columns stay unread).
class RecordingSource final : public ShardSource {
 public:
  explicit RecordingSource(const ShardSource& inner) : inner_(inner) {}
  const std::string& name() const override { return inner_.name(); }
  uint64_t size() const override { return inner_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_read_ += buf.size();
    return inner_.ReadAt(offset, buf);
  }
  uint64_t bytes_read() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_read_;
  }

 private:
  const ShardSource& inner_;
  mutable std::mutex mu_;
  mutable uint64_t bytes_read_ = 0;
};

TEST(ParquetReaderTest, ReadsOnlyRequestedColumnChunks) {
  auto mem = Load(kEpisodes);
  RecordingSource src(mem);
  auto f = Ok(ParquetFile::Open(src));
  const uint64_t after_footer = src.bytes_read();
  EXPECT_EQ(NoNulls(Ok(f.ReadInt64("length"))).size(), 4u);
  const uint64_t chunk = src.bytes_read() - after_footer;
  EXPECT_GT(chunk, 0u);
  EXPECT_LT(chunk, mem.size() / 20) << "reading one column read " << chunk << " of " << mem.size();
}

}  // namespace
}  // namespace packfs
