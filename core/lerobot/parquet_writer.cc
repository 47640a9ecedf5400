// Parquet writer: Thrift compact encoding of the footer and page headers, RLE/bit-packed levels,
// PLAIN values, and the layout of row groups; the size of a fixed-width file from the same code
// run over synthesized levels (so the computed size cannot drift from what is written).
#include "core/lerobot/parquet_writer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>

namespace packfs::parquet {
namespace {

// --- Thrift compact protocol (the encoding side of parquet_thrift.cc) ---------------------------

class ThriftWriter {
 public:
  explicit ThriftWriter(std::vector<uint8_t>* out) : out_(out) { last_.push_back(0); }

  void I16(int16_t id, int16_t v) {
    Field(id, kI16);
    Varint(ZigZag(v));
  }
  void I32(int16_t id, int32_t v) {
    Field(id, kI32);
    Varint(ZigZag(v));
  }
  void I64(int16_t id, int64_t v) {
    Field(id, kI64);
    Varint(ZigZag(v));
  }
  void Binary(int16_t id, std::string_view s) {
    Field(id, kBinary);
    Bytes(s);
  }
  void BeginStruct(int16_t id) {
    Field(id, kStruct);
    last_.push_back(0);
  }
  void EndStruct() {
    out_->push_back(0);  // STOP
    last_.pop_back();
  }
  void BeginList(int16_t id, ThriftType elem, size_t n) {
    Field(id, kList);
    if (n < 15) {
      out_->push_back(static_cast<uint8_t>((n << 4) | elem));
    } else {
      out_->push_back(static_cast<uint8_t>(0xF0 | elem));
      Varint(n);
    }
  }
  // A struct element of a list: fields, then EndStruct.
  void BeginListStruct() { last_.push_back(0); }
  void ListI32(int32_t v) { Varint(ZigZag(v)); }
  void ListBinary(std::string_view s) { Bytes(s); }
  // Ends the outermost struct.
  void Finish() { out_->push_back(0); }

 private:
  static uint64_t ZigZag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_->push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_->push_back(static_cast<uint8_t>(v));
  }
  void Bytes(std::string_view s) {
    Varint(s.size());
    out_->insert(out_->end(), s.begin(), s.end());
  }
  void Field(int16_t id, ThriftType type) {
    const int delta = id - last_.back();
    if (delta > 0 && delta <= 15) {
      out_->push_back(static_cast<uint8_t>((delta << 4) | type));
    } else {
      out_->push_back(type);
      Varint(ZigZag(id));
    }
    last_.back() = id;
  }

  std::vector<uint8_t>* out_;
  std::vector<int16_t> last_;  // last field id per open struct
};

// --- levels and values ----------------------------------------------------------------------

uint32_t LevelBitWidth(uint32_t max_level) {
  uint32_t w = 0;
  while (max_level >> w) ++w;
  return w;
}

void AppendVarint(uint64_t v, std::vector<uint8_t>* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<uint8_t>(v));
}

void AppendLe32(uint32_t v, std::vector<uint8_t>* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// DATA_PAGE v1 levels: a 4-byte length, then one RLE run when all levels are equal, else one
// bit-packed run (padded to a multiple of 8 values). The choice depends on the levels only, so
// the sizing path (synthesized levels) encodes exactly what the writing path does.
void AppendLevels(std::span<const uint32_t> levels, uint32_t max_level, std::vector<uint8_t>* out) {
  const uint32_t width = LevelBitWidth(max_level);
  const size_t len_at = out->size();
  AppendLe32(0, out);
  const bool constant =
      std::all_of(levels.begin(), levels.end(), [&](uint32_t l) { return l == levels[0]; });
  if (constant) {
    AppendVarint(uint64_t{levels.size()} << 1, out);
    const uint32_t v = levels.empty() ? 0 : levels[0];
    for (uint32_t b = 0; b < (width + 7) / 8; ++b) {
      out->push_back(static_cast<uint8_t>(v >> (8 * b)));
    }
  } else {
    const uint64_t groups = (levels.size() + 7) / 8;
    AppendVarint((groups << 1) | 1, out);
    const size_t start = out->size();
    out->resize(start + groups * width, 0);
    uint64_t bit = 0;
    for (uint32_t l : levels) {
      for (uint32_t b = 0; b < width; ++b, ++bit) {
        if ((l >> b) & 1) (*out)[start + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
  }
  const uint32_t len = static_cast<uint32_t>(out->size() - len_at - 4);
  for (int i = 0; i < 4; ++i) (*out)[len_at + i] = static_cast<uint8_t>(len >> (8 * i));
}

// Bytes of n PLAIN values of a fixed-width type.
uint64_t FixedValuesSize(int32_t type, uint64_t n) {
  switch (type) {
    case kBoolean: return (n + 7) / 8;
    case kInt32:
    case kFloat: return 4 * n;
    default: return 8 * n;  // kInt64, kDouble
  }
}

// Appends values [begin, end) of `cv` PLAIN-encoded.
void AppendPlainValues(int32_t type, const ColumnValues& cv, size_t begin, size_t end,
                       std::vector<uint8_t>* out) {
  auto le = [out](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  switch (type) {
    case kBoolean: {
      const size_t start = out->size();
      out->resize(start + (end - begin + 7) / 8, 0);
      for (size_t i = begin; i < end; ++i) {
        if (cv.ints[i] != 0) (*out)[start + (i - begin) / 8] |= uint8_t(1u << ((i - begin) % 8));
      }
      break;
    }
    case kInt32:
      for (size_t i = begin; i < end; ++i) le(static_cast<uint32_t>(cv.ints[i]), 4);
      break;
    case kInt64:
      for (size_t i = begin; i < end; ++i) le(static_cast<uint64_t>(cv.ints[i]), 8);
      break;
    case kFloat:
      for (size_t i = begin; i < end; ++i) {
        const float f = static_cast<float>(cv.doubles[i]);
        uint32_t u = 0;
        std::memcpy(&u, &f, 4);
        le(u, 4);
      }
      break;
    case kDouble:
      for (size_t i = begin; i < end; ++i) {
        uint64_t u = 0;
        std::memcpy(&u, &cv.doubles[i], 8);
        le(u, 8);
      }
      break;
    default:  // kByteArray
      for (size_t i = begin; i < end; ++i) {
        AppendLe32(static_cast<uint32_t>(cv.strings[i].size()), out);
        out->insert(out->end(), cv.strings[i].begin(), cv.strings[i].end());
      }
      break;
  }
}

// One column chunk: a page header and the levels, then `values_size` bytes of values to append.
Status AppendPagePrefix(const LeafShape& shape, std::span<const uint32_t> def,
                        std::span<const uint32_t> rep, uint64_t num_levels, uint64_t values_size,
                        const std::string& where, std::vector<uint8_t>* out) {
  std::vector<uint8_t> levels;
  if (shape.max_rep > 0) AppendLevels(rep, shape.max_rep, &levels);
  if (shape.max_def > 0) AppendLevels(def, shape.max_def, &levels);
  const uint64_t body = levels.size() + values_size;
  constexpr uint64_t kMax = std::numeric_limits<int32_t>::max();
  if (body > kMax || num_levels > kMax) {
    return Status::NotSupported(where + ": a page of " + std::to_string(body) +
                                " bytes is over Parquet's 2 GiB page limit; use fewer rows per "
                                "row group");
  }
  ThriftWriter t(out);
  t.I32(1, kDataPage);
  t.I32(2, static_cast<int32_t>(body));  // uncompressed_page_size
  t.I32(3, static_cast<int32_t>(body));  // compressed_page_size
  t.BeginStruct(5);                      // data_page_header
  t.I32(1, static_cast<int32_t>(num_levels));
  t.I32(2, kPlain);
  t.I32(3, kRle);
  t.I32(4, kRle);
  t.EndStruct();
  t.Finish();
  out->insert(out->end(), levels.begin(), levels.end());
  return Status::OK();
}

// --- layout and footer ----------------------------------------------------------------------

struct ChunkLayout {
  uint64_t size = 0;
  uint64_t num_levels = 0;
};

struct Layout {
  std::vector<uint64_t> group_rows;
  std::vector<std::vector<ChunkLayout>> chunks;  // [group][column]
};

Layout PlanGroups(size_t num_columns, uint64_t num_rows, uint64_t per_group) {
  Layout l;
  for (uint64_t r = 0; r < num_rows; r += per_group) {
    l.group_rows.push_back(std::min(per_group, num_rows - r));
  }
  l.chunks.assign(l.group_rows.size(), std::vector<ChunkLayout>(num_columns));
  return l;
}

void AppendSchemaLeaf(ThriftWriter* t, const WriterColumn& c, std::string_view name,
                      int32_t repetition) {
  t->BeginListStruct();
  t->I32(1, c.type);
  t->I32(3, repetition);
  t->Binary(4, name);
  if (c.type == kByteArray && c.utf8) {
    t->I32(6, 0);  // ConvertedType UTF8
    t->BeginStruct(10);
    t->BeginStruct(1);  // LogicalType.STRING
    t->EndStruct();
    t->EndStruct();
  } else if (c.type == kInt32 && c.int_converted_type) {
    t->I32(6, *c.int_converted_type);
  }
  t->EndStruct();
}

// The footer (FileMetaData) for chunks laid out back to back after the 4-byte magic.
std::vector<uint8_t> EncodeFooter(const std::vector<WriterColumn>& columns, uint64_t num_rows,
                                  const Layout& layout, const WriterOptions& options) {
  std::vector<uint8_t> out;
  ThriftWriter t(&out);
  t.I32(1, 1);  // version
  size_t elements = 1;
  for (const auto& c : columns) elements += c.list ? 3 : 1;
  t.BeginList(2, kStruct, elements);
  t.BeginListStruct();
  t.Binary(4, "schema");
  t.I32(5, static_cast<int32_t>(columns.size()));
  t.EndStruct();
  for (const auto& c : columns) {
    const int32_t rep = c.optional ? kOptional : kRequired;
    if (!c.list) {
      AppendSchemaLeaf(&t, c, c.name, rep);
      continue;
    }
    t.BeginListStruct();
    t.I32(3, rep);
    t.Binary(4, c.name);
    t.I32(5, 1);
    t.I32(6, kConvertedList);
    t.BeginStruct(10);
    t.BeginStruct(3);  // LogicalType.LIST
    t.EndStruct();
    t.EndStruct();
    t.EndStruct();
    t.BeginListStruct();
    t.I32(3, kRepeated);
    t.Binary(4, "list");
    t.I32(5, 1);
    t.EndStruct();
    AppendSchemaLeaf(&t, c, "element", c.element_optional ? kOptional : kRequired);
  }
  t.I64(3, static_cast<int64_t>(num_rows));
  t.BeginList(4, kStruct, layout.group_rows.size());
  uint64_t offset = 4;
  for (size_t g = 0; g < layout.group_rows.size(); ++g) {
    const uint64_t group_start = offset;
    uint64_t group_bytes = 0;
    for (const auto& ch : layout.chunks[g]) group_bytes += ch.size;
    t.BeginListStruct();
    t.BeginList(1, kStruct, columns.size());
    for (size_t c = 0; c < columns.size(); ++c) {
      const ChunkLayout& ch = layout.chunks[g][c];
      t.BeginListStruct();
      t.I64(2, static_cast<int64_t>(offset));  // file_offset
      t.BeginStruct(3);                         // meta_data
      t.I32(1, columns[c].type);
      t.BeginList(2, kI32, 2);
      t.ListI32(kPlain);
      t.ListI32(kRle);
      const bool list = columns[c].list;
      t.BeginList(3, kBinary, list ? 3 : 1);
      t.ListBinary(columns[c].name);
      if (list) {
        t.ListBinary("list");
        t.ListBinary("element");
      }
      t.I32(4, kUncompressed);
      t.I64(5, static_cast<int64_t>(ch.num_levels));
      t.I64(6, static_cast<int64_t>(ch.size));
      t.I64(7, static_cast<int64_t>(ch.size));
      t.I64(9, static_cast<int64_t>(offset));  // data_page_offset
      t.EndStruct();
      t.EndStruct();
      offset += ch.size;
    }
    t.I64(2, static_cast<int64_t>(group_bytes));  // total_byte_size
    t.I64(3, static_cast<int64_t>(layout.group_rows[g]));
    t.I64(5, static_cast<int64_t>(group_start));  // file_offset
    t.I64(6, static_cast<int64_t>(group_bytes));  // total_compressed_size
    t.I16(7, static_cast<int16_t>(g));            // ordinal
    t.EndStruct();
  }
  t.BeginList(5, kStruct, options.key_value_metadata.size());
  for (const auto& [k, v] : options.key_value_metadata) {
    t.BeginListStruct();
    t.Binary(1, k);
    t.Binary(2, v);
    t.EndStruct();
  }
  t.Binary(6, options.created_by);
  t.Finish();
  return out;
}

Status CheckSchema(const std::vector<WriterColumn>& columns, const WriterOptions& options,
                   uint64_t num_rows) {
  if (options.row_group_rows == 0) {
    return Status::InvalidArgument("Parquet writer: row_group_rows must be positive");
  }
  if ((num_rows + options.row_group_rows - 1) / options.row_group_rows > 32767) {
    return Status::InvalidArgument("Parquet writer: " + std::to_string(num_rows) +
                                   " rows make more than 32767 row groups");
  }
  if (columns.empty()) return Status::InvalidArgument("Parquet writer: no columns");
  for (const auto& c : columns) {
    const bool known = c.type == kBoolean || c.type == kInt32 || c.type == kInt64 ||
                       c.type == kFloat || c.type == kDouble || c.type == kByteArray;
    if (!known) {
      return Status::NotSupported("Parquet writer: column " + c.name + " has type " +
                                  TypeName(c.type) + ", which it does not write");
    }
    if (c.name.empty()) return Status::InvalidArgument("Parquet writer: a column has no name");
  }
  return Status::OK();
}

Result<std::vector<uint8_t>> Assemble(std::vector<uint8_t> data,
                                      const std::vector<uint8_t>& footer) {
  data.insert(data.end(), footer.begin(), footer.end());
  AppendLe32(static_cast<uint32_t>(footer.size()), &data);
  data.insert(data.end(), {'P', 'A', 'R', '1'});
  return data;
}

// Checks column c's supplied levels and values; fills the level index where each row starts
// (one extra entry: num_levels) and the value index at each level entry (one extra entry).
Status CheckColumn(const WriterColumn& col, const LeafShape& shape, const ColumnValues& cv,
                   uint64_t num_rows, std::vector<size_t>* row_start,
                   std::vector<size_t>* value_at) {
  const std::string where = "Parquet writer, column " + col.name;
  const uint64_t n = cv.num_levels;
  const bool def_ok = shape.max_def > 0 ? cv.def.size() == n : cv.def.empty();
  const bool rep_ok = shape.max_rep > 0 ? cv.rep.size() == n : cv.rep.empty();
  if (!def_ok || !rep_ok) {
    return Status::InvalidArgument(where + ": level counts do not match its " +
                                   std::to_string(n) + " level entries");
  }
  const uint32_t rep_def = shape.max_def - (col.element_optional ? 1 : 0);  // element present
  row_start->clear();
  value_at->clear();
  row_start->reserve(num_rows + 1);
  value_at->reserve(n + 1);
  size_t values = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t d = shape.max_def > 0 ? cv.def[i] : 0;
    const uint32_t r = shape.max_rep > 0 ? cv.rep[i] : 0;
    if (d > shape.max_def || r > shape.max_rep) {
      return Status::InvalidArgument(where + ": level entry " + std::to_string(i) +
                                     " is over the column's maximum levels");
    }
    if (r == 0) {
      if (row_start->size() >= num_rows) {
        return Status::InvalidArgument(where + " has more rows than the file's " +
                                       std::to_string(num_rows));
      }
      row_start->push_back(i);
    } else if (i == 0 || d < rep_def) {
      return Status::InvalidArgument(where + ": level entry " + std::to_string(i) +
                                     " continues a list without an element");
    }
    value_at->push_back(values);
    if (d == shape.max_def) ++values;
  }
  value_at->push_back(values);
  if (row_start->size() != num_rows) {
    return Status::InvalidArgument(where + " has " + std::to_string(row_start->size()) +
                                   " rows, the file " + std::to_string(num_rows));
  }
  row_start->push_back(n);
  size_t have = col.type == kFloat || col.type == kDouble ? cv.doubles.size()
                : col.type == kByteArray                  ? cv.strings.size()
                                                          : cv.ints.size();
  if (have != values) {
    return Status::InvalidArgument(where + " has " + std::to_string(have) + " values for " +
                                   std::to_string(values) + " non-null level entries");
  }
  if (col.list && col.fixed_length) {
    const uint32_t k = *col.fixed_length;
    for (uint64_t r = 0; r < num_rows; ++r) {
      const size_t b = (*row_start)[r], e = (*row_start)[r + 1];
      const bool ok = k == 0 ? (e - b == 1 && cv.def[b] == rep_def - 1)
                             : (e - b == k && (*value_at)[e] - (*value_at)[b] == k);
      if (!ok) {
        return Status::InvalidArgument(where + ": row " + std::to_string(r) +
                                       " does not hold exactly " + std::to_string(k) +
                                       " non-null elements");
      }
    }
  }
  return Status::OK();
}

}  // namespace

LeafShape WriterLeafShape(const WriterColumn& column) {
  LeafShape s;
  s.type = column.type;
  s.max_def = column.optional ? 1 : 0;
  if (column.list) {
    s.max_def += 1 + (column.element_optional ? 1 : 0);
    s.max_rep = 1;
  }
  return s;
}

Result<std::vector<uint8_t>> WriteParquetFile(const std::vector<WriterColumn>& columns,
                                              uint64_t num_rows, const WriterOptions& options,
                                              const ColumnSupplier& supply) {
  PACKFS_RETURN_IF_ERROR(CheckSchema(columns, options, num_rows));
  Layout layout = PlanGroups(columns.size(), num_rows, options.row_group_rows);
  // Chunks are encoded column by column but laid out group by group.
  std::vector<std::vector<std::vector<uint8_t>>> bytes(
      layout.group_rows.size(), std::vector<std::vector<uint8_t>>(columns.size()));
  std::vector<size_t> row_start, value_at;
  for (size_t c = 0; c < columns.size(); ++c) {
    const WriterColumn& col = columns[c];
    const LeafShape shape = WriterLeafShape(col);
    PACKFS_ASSIGN_OR_RETURN(ColumnValues cv, supply(c));
    PACKFS_RETURN_IF_ERROR(CheckColumn(col, shape, cv, num_rows, &row_start, &value_at));
    uint64_t row = 0;
    for (size_t g = 0; g < layout.group_rows.size(); ++g) {
      const size_t lb = row_start[row], le = row_start[row + layout.group_rows[g]];
      row += layout.group_rows[g];
      const size_t vb = value_at[lb], ve = value_at[le];
      std::span<const uint32_t> def, rep;
      if (shape.max_def > 0) def = std::span<const uint32_t>(cv.def).subspan(lb, le - lb);
      if (shape.max_rep > 0) rep = std::span<const uint32_t>(cv.rep).subspan(lb, le - lb);
      uint64_t values_size = 0;
      if (col.type == kByteArray) {
        for (size_t i = vb; i < ve; ++i) values_size += 4 + cv.strings[i].size();
      } else {
        values_size = FixedValuesSize(col.type, ve - vb);
      }
      std::vector<uint8_t>& out = bytes[g][c];
      PACKFS_RETURN_IF_ERROR(AppendPagePrefix(shape, def, rep, le - lb, values_size,
                                              "Parquet writer, column " + col.name, &out));
      AppendPlainValues(col.type, cv, vb, ve, &out);
      layout.chunks[g][c] = ChunkLayout{out.size(), le - lb};
    }
  }
  const std::vector<uint8_t> footer = EncodeFooter(columns, num_rows, layout, options);
  uint64_t total = 4 + footer.size() + 8;
  for (const auto& g : bytes) {
    for (const auto& ch : g) total += ch.size();
  }
  std::vector<uint8_t> data;
  data.reserve(total);
  data.insert(data.end(), {'P', 'A', 'R', '1'});
  for (auto& g : bytes) {
    for (auto& ch : g) {
      data.insert(data.end(), ch.begin(), ch.end());
      std::vector<uint8_t>().swap(ch);
    }
  }
  return Assemble(std::move(data), footer);
}

Result<uint64_t> ParquetFileSize(const std::vector<WriterColumn>& columns, uint64_t num_rows,
                                 const WriterOptions& options) {
  PACKFS_RETURN_IF_ERROR(CheckSchema(columns, options, num_rows));
  for (const auto& c : columns) {
    if (c.type == kByteArray || (c.list && !c.fixed_length)) {
      return Status::NotSupported("Parquet writer: column " + c.name +
                                  (c.type == kByteArray ? " holds byte strings"
                                                        : " holds lists of varying length") +
                                  ", so the file's size depends on its values: build the file "
                                  "to know its size");
    }
  }
  Layout layout = PlanGroups(columns.size(), num_rows, options.row_group_rows);
  uint64_t total = 4;
  std::vector<uint32_t> def, rep;
  std::vector<uint8_t> prefix;
  for (size_t c = 0; c < columns.size(); ++c) {
    const WriterColumn& col = columns[c];
    const LeafShape shape = WriterLeafShape(col);
    for (size_t g = 0; g < layout.group_rows.size(); ++g) {
      const uint64_t rows = layout.group_rows[g];
      // The levels of `rows` rows without nulls (empty lists when fixed_length is 0).
      const uint64_t k = col.list ? *col.fixed_length : 1;
      const uint64_t levels = k == 0 ? rows : rows * k;
      const uint64_t values = k == 0 ? 0 : levels;
      const uint32_t empty_list_def = shape.max_def - 1 - (col.element_optional ? 1 : 0);
      def.assign(shape.max_def > 0 ? levels : 0, k == 0 ? empty_list_def : shape.max_def);
      rep.clear();
      if (shape.max_rep > 0) {
        rep.reserve(levels);
        for (uint64_t r = 0; r < rows; ++r) {
          for (uint64_t e = 0; e < std::max<uint64_t>(k, 1); ++e) rep.push_back(e == 0 ? 0 : 1);
        }
      }
      prefix.clear();
      const uint64_t values_size = FixedValuesSize(col.type, values);
      PACKFS_RETURN_IF_ERROR(AppendPagePrefix(shape, def, rep, levels, values_size,
                                              "Parquet writer, column " + col.name, &prefix));
      layout.chunks[g][c] = ChunkLayout{prefix.size() + values_size, levels};
      total += prefix.size() + values_size;
    }
  }
  return total + EncodeFooter(columns, num_rows, layout, options).size() + 8;
}

}  // namespace packfs::parquet
