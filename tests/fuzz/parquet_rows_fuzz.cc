// Fuzz target: a Parquet file's bytes through the row-range and nested-list readers
// (ParquetFile::ReadColumnRows, ReadNestedDoubleList) and, when a range reads, through
// parquet_writer and back: nothing may crash, hang or allocate beyond the (lowered) limits; a
// range that reads has exactly the rows asked for, and what the writer accepts reads back equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/lerobot/parquet_reader.h"
#include "core/lerobot/parquet_writer.h"

namespace {

// Rows of a decoded range: level entries starting a row.
uint64_t CountRows(const packfs::ParquetColumnRows& r) {
  if (r.shape.max_rep == 0) return r.values.num_levels;
  uint64_t n = 0;
  for (uint32_t rep : r.values.rep) n += rep == 0;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  packfs::MemoryShardSource src("fuzz.parquet", std::vector<uint8_t>(data, data + size));
  packfs::ParquetOptions opts;
  opts.max_column_values = 1 << 20;
  opts.max_column_bytes = 16 << 20;
  opts.max_page_bytes = 16 << 20;
  auto f = packfs::ParquetFile::Open(src, opts);
  if (!f.ok()) return 0;
  std::vector<std::string> tops;
  for (const auto& path : f->column_paths()) tops.push_back(path.substr(0, path.find('.')));
  const uint64_t n = f->num_rows();
  for (const auto& top : tops) {
    (void)f->ReadNestedDoubleList(top);
    for (auto [first, count] : {std::pair<uint64_t, uint64_t>{0, n}, {n / 3, n / 2}, {n, 0},
                                {n > 0 ? n - 1 : 0, n > 0 ? 1 : 0}, {1, n}}) {
      auto r = f->ReadColumnRows(top, first, count);
      if (!r.ok()) continue;
      if (CountRows(*r) != count) std::abort();
      // Re-write the range as a file of its own and read it back.
      const int32_t t = r->shape.type;
      if (t == 3 || t == 7) continue;  // INT96, FIXED_LEN_BYTE_ARRAY: not written
      packfs::parquet::WriterColumn col;
      col.name = top;
      col.type = t;
      col.optional = r->list ? r->element_def >= 2 : r->shape.max_def > 0;
      col.list = r->list;
      col.element_optional = r->list && r->shape.max_def > r->element_def;
      const packfs::parquet::LeafShape want = packfs::parquet::WriterLeafShape(col);
      if (want.max_def != r->shape.max_def || want.max_rep != r->shape.max_rep) continue;
      const packfs::parquet::ColumnValues values = r->values;
      auto bytes = packfs::parquet::WriteParquetFile(
          {col}, count, {}, [&](size_t) -> packfs::Result<packfs::parquet::ColumnValues> {
            return values;
          });
      if (!bytes.ok()) continue;
      packfs::MemoryShardSource out("out.parquet", *bytes);
      auto g = packfs::ParquetFile::Open(out);
      if (!g.ok()) std::abort();
      auto back = g->ReadColumnRows(top, 0, count);
      if (!back.ok()) std::abort();
      const auto& a = back->values;
      const auto& b = values;
      if (a.def != b.def || a.rep != b.rep || a.num_levels != b.num_levels || a.ints != b.ints ||
          a.strings != b.strings || a.doubles.size() != b.doubles.size()) {
        std::abort();
      }
    }
  }
  return 0;
}
