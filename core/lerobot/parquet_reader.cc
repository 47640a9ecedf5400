// ParquetFile: footer validation, the schema's leaf columns with their definition/repetition
// levels, and assembly of decoded pages into rows (flat columns and lists of strings).
#include "core/lerobot/parquet_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/lerobot/parquet_pages.h"

namespace packfs {

using parquet::ColumnValues;
using parquet::SchemaElement;

namespace {

constexpr uint64_t kMagicSize = 4;
constexpr uint64_t kTailSize = 8;  // footer length + magic
constexpr int kMaxSchemaDepth = 64;

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) {
    if (!s.empty()) s += '.';
    s += p;
  }
  return s;
}

}  // namespace

Result<ParquetFile> ParquetFile::Open(const ShardSource& src, const ParquetOptions& options) {
  const std::string& name = src.name();
  const uint64_t size = src.size();
  if (size < kMagicSize + kTailSize) {
    return Status::Corruption("not a Parquet file: " + name + " is only " + std::to_string(size) +
                              " bytes");
  }
  std::array<uint8_t, kMagicSize> head{};
  std::array<uint8_t, kTailSize> tail{};
  PACKFS_RETURN_IF_ERROR(ReadExactly(src, 0, head, "the Parquet magic"));
  PACKFS_RETURN_IF_ERROR(ReadExactly(src, size - kTailSize, tail, "the Parquet footer length"));
  if (std::memcmp(tail.data() + 4, "PARE", 4) == 0) {
    return Status::NotSupported("Parquet file " + name + " has an encrypted footer");
  }
  if (std::memcmp(head.data(), "PAR1", 4) != 0 || std::memcmp(tail.data() + 4, "PAR1", 4) != 0) {
    return Status::Corruption("not a Parquet file: " + name + " lacks the PAR1 magic at " +
                              (std::memcmp(head.data(), "PAR1", 4) != 0 ? "its start" : "its end"));
  }
  const uint64_t footer_len = static_cast<uint64_t>(tail[0]) | (uint64_t{tail[1]} << 8) |
                              (uint64_t{tail[2]} << 16) | (uint64_t{tail[3]} << 24);
  if (footer_len > size - kMagicSize - kTailSize) {
    return Status::Corruption("Parquet file " + name + " declares a footer of " +
                              std::to_string(footer_len) + " bytes but is only " +
                              std::to_string(size) + " bytes (truncated or damaged)");
  }
  if (footer_len > options.max_footer_bytes) {
    return Status::NotSupported("Parquet file " + name + " has a footer of " +
                                std::to_string(footer_len) + " bytes, over the limit of " +
                                std::to_string(options.max_footer_bytes));
  }
  std::vector<uint8_t> footer(footer_len);
  PACKFS_RETURN_IF_ERROR(
      ReadExactly(src, size - kTailSize - footer_len, footer, "the Parquet footer"));
  auto meta = parquet::DecodeFileMetaData(footer);
  if (!meta.ok()) return meta.status().WithPrefix("Parquet file " + name);

  ParquetFile f(&src, options, std::move(meta).value());
  PACKFS_RETURN_IF_ERROR(f.BuildLeaves());
  return f;
}

Status ParquetFile::BuildLeaves() {
  const auto& schema = meta_.schema;
  const std::string where = "Parquet file " + name();
  if (schema.empty()) return Status::Corruption(where + " has an empty schema");

  struct Walker {
    const std::vector<SchemaElement>& schema;
    std::vector<Leaf>* leaves;
    const std::string& where;
    size_t next = 1;
    std::vector<size_t> chain;
    std::vector<std::string> names;

    Status Children(int32_t count, int depth, uint32_t def, uint32_t rep) {
      if (depth > kMaxSchemaDepth) return Status::Corruption(where + ": schema nested too deeply");
      if (count < 0 || static_cast<uint64_t>(count) > schema.size() - next) {
        return Status::Corruption(where + ": schema declares " + std::to_string(count) +
                                  " children, more than its elements");
      }
      for (int32_t i = 0; i < count; ++i) {
        // Checked per child too: a nested group before this one may have used up the elements.
        if (next >= schema.size()) {
          return Status::Corruption(where + ": schema ends inside group '" + Join(names) + "'");
        }
        const size_t idx = next++;
        const SchemaElement& e = schema[idx];
        const int32_t r = e.repetition.value_or(parquet::kRequired);
        if (r < parquet::kRequired || r > parquet::kRepeated) {
          return Status::Corruption(where + ": schema element '" + e.name +
                                    "' has a bad repetition type");
        }
        const uint32_t d2 = def + (r != parquet::kRequired ? 1 : 0);
        const uint32_t r2 = rep + (r == parquet::kRepeated ? 1 : 0);
        chain.push_back(idx);
        names.push_back(e.name);
        if (e.num_children > 0) {
          PACKFS_RETURN_IF_ERROR(Children(e.num_children, depth + 1, d2, r2));
        } else {
          if (!e.type) {
            return Status::Corruption(where + ": schema leaf '" + Join(names) + "' has no type");
          }
          leaves->push_back(Leaf{Join(names), chain, parquet::LeafShape{*e.type, d2, r2}});
        }
        chain.pop_back();
        names.pop_back();
      }
      return Status::OK();
    }
  };
  Walker w{schema, &leaves_, where, 1, {}, {}};
  PACKFS_RETURN_IF_ERROR(w.Children(schema[0].num_children, 0, 0, 0));
  if (w.next != schema.size()) {
    return Status::Corruption(where + ": schema has " + std::to_string(schema.size() - w.next) +
                              " elements outside its tree");
  }

  if (meta_.num_rows < 0) return Status::Corruption(where + " declares a negative row count");
  num_rows_ = static_cast<uint64_t>(meta_.num_rows);
  uint64_t rows = 0;
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) {
    const auto& rg = meta_.row_groups[g];
    const std::string rg_where = where + ", row group " + std::to_string(g);
    if (rg.num_rows < 0) return Status::Corruption(rg_where + " has a negative row count");
    rows += static_cast<uint64_t>(rg.num_rows);
    if (rg.columns.size() != leaves_.size()) {
      return Status::Corruption(rg_where + " has " + std::to_string(rg.columns.size()) +
                                " column chunks, the schema " + std::to_string(leaves_.size()) +
                                " columns");
    }
    for (size_t c = 0; c < rg.columns.size(); ++c) {
      const auto& ch = rg.columns[c];
      const std::string col_where = rg_where + ", column " + leaves_[c].path;
      if (!ch.file_path.empty()) {
        return Status::NotSupported(col_where + " lives in another file (" + ch.file_path + ")");
      }
      if (!ch.meta) return Status::Corruption(col_where + " has no column metadata");
      if (!ch.meta->path_in_schema.empty() && Join(ch.meta->path_in_schema) != leaves_[c].path) {
        return Status::Corruption(col_where + " is stored as '" +
                                  Join(ch.meta->path_in_schema) + "'");
      }
      if (ch.meta->type != leaves_[c].shape.type) {
        return Status::Corruption(col_where + " has type " + parquet::TypeName(ch.meta->type) +
                                  ", the schema " + parquet::TypeName(leaves_[c].shape.type));
      }
      if (ch.meta->num_values < 0) {
        return Status::Corruption(col_where + " declares a negative value count");
      }
    }
  }
  if (rows != num_rows_) {
    return Status::Corruption(where + " declares " + std::to_string(num_rows_) +
                              " rows, its row groups " + std::to_string(rows));
  }
  return Status::OK();
}

std::vector<std::string> ParquetFile::column_paths() const {
  std::vector<std::string> out;
  out.reserve(leaves_.size());
  for (const auto& l : leaves_) out.push_back(l.path);
  return out;
}

bool ParquetFile::HasColumn(std::string_view path) const { return FindLeaf(path).ok(); }

std::string ParquetFile::Where(const Leaf& leaf) const {
  return "Parquet file " + name() + ", column " + leaf.path;
}

Result<size_t> ParquetFile::FindLeaf(std::string_view path) const {
  std::optional<size_t> found;
  for (size_t i = 0; i < leaves_.size(); ++i) {
    if (leaves_[i].path != path) continue;
    if (found) {
      return Status::InvalidArgument("Parquet file " + name() + " has two columns named '" +
                                     std::string(path) + "'");
    }
    found = i;
  }
  if (!found) {
    return Status::NotFound("Parquet file " + name() + " has no column '" + std::string(path) +
                            "'");
  }
  return *found;
}

Status ParquetFile::ReadLeaf(size_t leaf_index, ColumnValues* out, size_t first_group,
                             size_t end_group) const {
  const Leaf& leaf = leaves_[leaf_index];
  const std::string where = Where(leaf);
  end_group = std::min(end_group, meta_.row_groups.size());
  uint64_t total = 0;
  for (size_t g = first_group; g < end_group; ++g) {
    total += static_cast<uint64_t>(meta_.row_groups[g].columns[leaf_index].meta->num_values);
    if (total > options_.max_column_values) {
      return Status::NotSupported(where + " has over " +
                                  std::to_string(options_.max_column_values) +
                                  " values, more than packfs reads from metadata tables");
    }
  }
  const parquet::DecodeLimits limits{options_.max_column_values, options_.max_column_bytes,
                                     options_.max_page_bytes};
  uint64_t bytes_used = 0;
  const uint64_t size = src_->size();
  for (size_t g = first_group; g < end_group; ++g) {
    const parquet::ColumnMetaData& m = *meta_.row_groups[g].columns[leaf_index].meta;
    if (m.num_values == 0) continue;
    int64_t start = m.data_page_offset;
    if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 &&
        *m.dictionary_page_offset < start) {
      start = *m.dictionary_page_offset;
    }
    if (start < static_cast<int64_t>(kMagicSize) || static_cast<uint64_t>(start) >= size ||
        m.total_compressed_size <= 0 ||
        static_cast<uint64_t>(m.total_compressed_size) > size - static_cast<uint64_t>(start)) {
      return Status::Corruption(where + ", row group " + std::to_string(g) + ": column chunk at " +
                                std::to_string(start) + " of " +
                                std::to_string(m.total_compressed_size) +
                                " bytes lies outside the file (" + std::to_string(size) +
                                " bytes)");
    }
    std::vector<uint8_t> chunk(static_cast<size_t>(m.total_compressed_size));
    PACKFS_RETURN_IF_ERROR(
        ReadExactly(*src_, static_cast<uint64_t>(start), chunk, "a Parquet column chunk"));
    Status st = parquet::DecodeColumnChunk(chunk, m, leaf.shape, limits, out, &bytes_used);
    if (!st.ok()) return st.WithPrefix(where + ", row group " + std::to_string(g));
  }
  return Status::OK();
}

Status ParquetFile::CheckFlat(const Leaf& leaf, const char* want, bool type_ok) const {
  if (leaf.shape.max_rep > 0) {
    return Status::InvalidArgument(Where(leaf) + " is a repeated (list) column; read it as a list");
  }
  if (!type_ok) {
    return Status::InvalidArgument(Where(leaf) + " holds " + parquet::TypeName(leaf.shape.type) +
                                   " values, not " + want);
  }
  return Status::OK();
}

namespace {

// One optional per level entry: present where def == max_def, taking values in order.
template <typename T, typename V>
Result<std::vector<std::optional<T>>> AssembleFlat(const ColumnValues& cv, uint32_t max_def,
                                                   const std::vector<V>& values,
                                                   uint64_t num_rows, const std::string& where) {
  if (cv.num_levels != num_rows) {
    return Status::Corruption(where + " has " + std::to_string(cv.num_levels) + " values for " +
                              std::to_string(num_rows) + " rows");
  }
  std::vector<std::optional<T>> out;
  out.reserve(cv.num_levels);
  size_t k = 0;
  for (uint64_t i = 0; i < cv.num_levels; ++i) {
    if (max_def == 0 || cv.def[i] == max_def) {
      if (k >= values.size()) return Status::Corruption(where + " has fewer values than levels");
      out.emplace_back(values[k++]);
    } else {
      out.emplace_back(std::nullopt);
    }
  }
  return out;
}

}  // namespace

Result<std::vector<std::optional<int64_t>>> ParquetFile::ReadInt64(std::string_view path) const {
  PACKFS_ASSIGN_OR_RETURN(size_t i, FindLeaf(path));
  const Leaf& leaf = leaves_[i];
  const int32_t t = leaf.shape.type;
  PACKFS_RETURN_IF_ERROR(CheckFlat(
      leaf, "integers", t == parquet::kInt32 || t == parquet::kInt64 || t == parquet::kBoolean));
  ColumnValues cv;
  PACKFS_RETURN_IF_ERROR(ReadLeaf(i, &cv));
  return AssembleFlat<int64_t>(cv, leaf.shape.max_def, cv.ints, num_rows_, Where(leaf));
}

Result<std::vector<std::optional<double>>> ParquetFile::ReadDouble(std::string_view path) const {
  PACKFS_ASSIGN_OR_RETURN(size_t i, FindLeaf(path));
  const Leaf& leaf = leaves_[i];
  const int32_t t = leaf.shape.type;
  PACKFS_RETURN_IF_ERROR(
      CheckFlat(leaf, "floating-point numbers", t == parquet::kFloat || t == parquet::kDouble));
  ColumnValues cv;
  PACKFS_RETURN_IF_ERROR(ReadLeaf(i, &cv));
  return AssembleFlat<double>(cv, leaf.shape.max_def, cv.doubles, num_rows_, Where(leaf));
}

Result<std::vector<std::optional<std::string>>> ParquetFile::ReadString(
    std::string_view path) const {
  PACKFS_ASSIGN_OR_RETURN(size_t i, FindLeaf(path));
  const Leaf& leaf = leaves_[i];
  PACKFS_RETURN_IF_ERROR(CheckFlat(leaf, "strings", leaf.shape.type == parquet::kByteArray));
  ColumnValues cv;
  PACKFS_RETURN_IF_ERROR(ReadLeaf(i, &cv));
  return AssembleFlat<std::string>(cv, leaf.shape.max_def, cv.strings, num_rows_, Where(leaf));
}

Status ParquetFile::FindList(std::string_view list_column, const char* want,
                             bool (*type_ok)(int32_t), size_t* leaf_index,
                             uint32_t* elem_def) const {
  // Find the leaf two levels below the named group: <list_column>.<repeated group>.<element>.
  std::optional<size_t> found;
  for (size_t i = 0; i < leaves_.size(); ++i) {
    const auto& chain = leaves_[i].chain;
    if (chain.size() < 3) continue;
    std::vector<std::string> head;
    for (size_t k = 0; k + 2 < chain.size(); ++k) head.push_back(meta_.schema[chain[k]].name);
    if (Join(head) == list_column) found = i;
  }
  const std::string where = "Parquet file " + name() + ", column " + std::string(list_column);
  if (!found) {
    if (FindLeaf(list_column).ok()) {
      return Status::InvalidArgument(where + " is not a list (a 3-level LIST group)");
    }
    return Status::NotFound("Parquet file " + name() + " has no list column '" +
                            std::string(list_column) + "'");
  }
  const Leaf& leaf = leaves_[*found];
  const auto& chain = leaf.chain;
  const SchemaElement& group = meta_.schema[chain[chain.size() - 3]];
  const SchemaElement& repeated = meta_.schema[chain[chain.size() - 2]];
  const bool is_list = group.logical_list || group.converted_type == parquet::kConvertedList;
  if (!is_list || group.num_children != 1 || repeated.num_children != 1 ||
      repeated.repetition != parquet::kRepeated || leaf.shape.max_rep != 1) {
    return Status::NotSupported(where + " is not a 3-level LIST of one repeated group (" +
                                leaf.path + "); other nested layouts are not supported");
  }
  if (!type_ok(leaf.shape.type)) {
    return Status::InvalidArgument(where + " holds " + parquet::TypeName(leaf.shape.type) +
                                   " elements, not " + want);
  }
  // Definition level at which a list has at least one element.
  uint32_t def = 0;
  for (size_t k = 0; k + 1 < chain.size(); ++k) {
    def += meta_.schema[chain[k]].repetition.value_or(parquet::kRequired) != parquet::kRequired;
  }
  *leaf_index = *found;
  *elem_def = def;
  return Status::OK();
}

template <typename T>
Result<std::vector<std::vector<T>>> ParquetFile::AssembleList(std::string_view list_column,
                                                              size_t leaf_index,
                                                              uint32_t elem_def,
                                                              ColumnValues* cv,
                                                              std::vector<T>* values) const {
  const Leaf& leaf = leaves_[leaf_index];
  const std::string where = "Parquet file " + name() + ", column " + std::string(list_column);
  PACKFS_RETURN_IF_ERROR(ReadLeaf(leaf_index, cv));
  std::vector<std::vector<T>> rows;
  size_t k = 0;
  for (uint64_t i = 0; i < cv->num_levels; ++i) {
    const uint32_t def = cv->def.empty() ? leaf.shape.max_def : cv->def[i];
    if (cv->rep[i] == 0) {
      if (rows.size() >= num_rows_) {
        return Status::Corruption(where + " has more lists than the file has rows");
      }
      rows.emplace_back();
    } else if (rows.empty()) {
      return Status::Corruption(where + " continues a list before starting one");
    }
    if (def < elem_def) continue;  // null or empty list
    if (def != leaf.shape.max_def) return Status::NotSupported(where + " holds a null element");
    if (k >= values->size()) return Status::Corruption(where + " has fewer values than levels");
    rows.back().push_back(std::move((*values)[k++]));
  }
  if (rows.size() != num_rows_) {
    return Status::Corruption(where + " has " + std::to_string(rows.size()) + " lists for " +
                              std::to_string(num_rows_) + " rows");
  }
  return rows;
}

Result<std::vector<std::vector<std::string>>> ParquetFile::ReadStringList(
    std::string_view list_column) const {
  size_t leaf = 0;
  uint32_t elem_def = 0;
  PACKFS_RETURN_IF_ERROR(FindList(
      list_column, "strings", [](int32_t t) { return t == parquet::kByteArray; }, &leaf,
      &elem_def));
  ColumnValues cv;
  return AssembleList(list_column, leaf, elem_def, &cv, &cv.strings);
}

Result<std::vector<std::vector<int64_t>>> ParquetFile::ReadInt64List(
    std::string_view list_column) const {
  size_t leaf = 0;
  uint32_t elem_def = 0;
  PACKFS_RETURN_IF_ERROR(FindList(
      list_column, "integers",
      [](int32_t t) {
        return t == parquet::kInt32 || t == parquet::kInt64 || t == parquet::kBoolean;
      },
      &leaf, &elem_def));
  ColumnValues cv;
  return AssembleList(list_column, leaf, elem_def, &cv, &cv.ints);
}

Result<std::vector<std::vector<double>>> ParquetFile::ReadDoubleList(
    std::string_view list_column) const {
  size_t leaf = 0;
  uint32_t elem_def = 0;
  PACKFS_RETURN_IF_ERROR(FindList(
      list_column, "floating-point numbers",
      [](int32_t t) { return t == parquet::kFloat || t == parquet::kDouble; }, &leaf, &elem_def));
  ColumnValues cv;
  return AssembleList(list_column, leaf, elem_def, &cv, &cv.doubles);
}

std::vector<uint64_t> ParquetFile::row_group_rows() const {
  std::vector<uint64_t> out;
  out.reserve(meta_.row_groups.size());
  for (const auto& rg : meta_.row_groups) out.push_back(static_cast<uint64_t>(rg.num_rows));
  return out;
}

Result<ParquetColumnRows> ParquetFile::ReadColumnRows(std::string_view column, uint64_t first_row,
                                                      uint64_t count) const {
  const std::string where = "Parquet file " + name() + ", column " + std::string(column);
  std::optional<size_t> found;
  size_t leaves = 0;
  for (size_t i = 0; i < leaves_.size(); ++i) {
    if (meta_.schema[leaves_[i].chain[0]].name != column) continue;
    ++leaves;
    found = i;
  }
  if (!found) {
    return Status::NotFound("Parquet file " + name() + " has no column '" + std::string(column) +
                            "'");
  }
  if (leaves > 1) {
    return Status::NotSupported(where + " is a group of " + std::to_string(leaves) +
                                " columns (a struct); only flat columns and lists are read");
  }
  if (first_row > num_rows_ || count > num_rows_ - first_row) {
    return Status::InvalidArgument(where + ": rows " + std::to_string(first_row) + " to " +
                                   std::to_string(first_row + count) + " lie past the end of the "
                                   "file (" + std::to_string(num_rows_) + " rows)");
  }
  const Leaf& leaf = leaves_[*found];
  ParquetColumnRows out;
  out.leaf_path = leaf.path;
  out.shape = leaf.shape;
  out.element_def = leaf.shape.max_def;
  if (leaf.shape.max_rep > 1) {
    return Status::NotSupported(where + " holds lists nested in lists (" + leaf.path +
                                "); only flat columns and lists of values are read by row");
  }
  if (leaf.shape.max_rep > 0) {
    size_t li = 0;
    uint32_t elem_def = 0;
    PACKFS_RETURN_IF_ERROR(FindList(
        column, "values", [](int32_t) { return true; }, &li, &elem_def));
    out.list = true;
    out.element_def = elem_def;
  }
  // Row groups holding the range, and the file row where the first of them starts.
  size_t g0 = 0, g1 = 0;
  uint64_t start = 0, row = 0;
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) {
    const uint64_t n = static_cast<uint64_t>(meta_.row_groups[g].num_rows);
    if (row + n <= first_row) {
      row += n;
      g0 = g + 1;
      start = row;
      continue;
    }
    if (row >= first_row + count) break;
    g1 = g + 1;
    row += n;
  }
  if (count == 0) return out;
  ColumnValues all;
  PACKFS_RETURN_IF_ERROR(ReadLeaf(*found, &all, g0, g1));
  // Keep the level entries of the range's rows and the values they hold.
  const bool has_def = leaf.shape.max_def > 0;
  const bool has_rep = leaf.shape.max_rep > 0;
  uint64_t r = start;
  bool started = false;
  size_t v = 0, v0 = 0, v1 = 0, l0 = 0, l1 = 0;
  for (uint64_t i = 0; i < all.num_levels; ++i) {
    if (!has_rep || all.rep[i] == 0) {
      if (started) ++r;
      started = true;
      if (r == first_row) {
        l0 = i;
        v0 = v;
      }
      if (r == first_row + count) break;
    }
    if (!has_def || all.def[i] == leaf.shape.max_def) ++v;
    l1 = i + 1;
    v1 = v;
  }
  const uint64_t rows_seen = started ? r - start + 1 : 0;
  if (rows_seen < first_row + count - start) {
    return Status::Corruption(where + " holds " + std::to_string(rows_seen) +
                              " rows in row groups " + std::to_string(g0) + " to " +
                              std::to_string(g1) + ", which declare more");
  }
  const size_t have = std::max({all.ints.size(), all.doubles.size(), all.strings.size()});
  if (v1 > have) return Status::Corruption(where + " has fewer values than levels");
  ColumnValues& cv = out.values;
  cv.num_levels = l1 - l0;
  if (has_def) cv.def.assign(all.def.begin() + l0, all.def.begin() + l1);
  if (has_rep) cv.rep.assign(all.rep.begin() + l0, all.rep.begin() + l1);
  auto slice = [&](auto& from, auto& to) {
    if (from.empty()) return;
    to.assign(std::make_move_iterator(from.begin() + v0),
              std::make_move_iterator(from.begin() + v1));
  };
  slice(all.ints, cv.ints);
  slice(all.doubles, cv.doubles);
  slice(all.strings, cv.strings);
  return out;
}

Result<std::vector<ParquetNestedList>> ParquetFile::ReadNestedDoubleList(
    std::string_view list_column) const {
  const std::string where = "Parquet file " + name() + ", column " + std::string(list_column);
  std::optional<size_t> found;
  size_t leaves = 0;
  for (size_t i = 0; i < leaves_.size(); ++i) {
    if (meta_.schema[leaves_[i].chain[0]].name != list_column) continue;
    ++leaves;
    found = i;
  }
  if (!found) {
    return Status::NotFound("Parquet file " + name() + " has no list column '" +
                            std::string(list_column) + "'");
  }
  const Leaf& leaf = leaves_[*found];
  const auto& chain = leaf.chain;
  // <col> (LIST) / list (repeated) / element (LIST) / list (repeated) / ... / element (leaf).
  const size_t depth = (chain.size() - 1) / 2;
  bool layout_ok = leaves == 1 && depth >= 1 && chain.size() == 2 * depth + 1 &&
                   leaf.shape.max_rep == depth;
  for (size_t k = 0; layout_ok && k < depth; ++k) {
    const SchemaElement& group = meta_.schema[chain[2 * k]];
    const SchemaElement& repeated = meta_.schema[chain[2 * k + 1]];
    layout_ok = (group.logical_list || group.converted_type == parquet::kConvertedList) &&
                group.num_children == 1 && repeated.num_children == 1 &&
                repeated.repetition == parquet::kRepeated;
  }
  if (!layout_ok) {
    return Status::NotSupported(where + " is not a list of values nested in 3-level LISTs (" +
                                leaf.path + ")");
  }
  if (leaf.shape.type != parquet::kFloat && leaf.shape.type != parquet::kDouble) {
    return Status::InvalidArgument(where + " holds " + parquet::TypeName(leaf.shape.type) +
                                   " elements, not floating-point numbers");
  }
  // elem_def[k]: the definition level at which the depth-k list (1-based) holds an element.
  std::vector<uint32_t> elem_def(depth + 1, 0);
  uint32_t def = 0;
  for (size_t i = 0, k = 0; i + 1 < chain.size(); ++i) {
    const int32_t r = meta_.schema[chain[i]].repetition.value_or(parquet::kRequired);
    def += r != parquet::kRequired;
    if (r == parquet::kRepeated) elem_def[++k] = def;
  }
  ColumnValues cv;
  PACKFS_RETURN_IF_ERROR(ReadLeaf(*found, &cv));
  std::vector<ParquetNestedList> rows;
  std::vector<ParquetNestedList*> open(depth + 1, nullptr);  // the current list at each depth
  size_t v = 0;
  for (uint64_t i = 0; i < cv.num_levels; ++i) {
    const uint32_t d = cv.def.empty() ? leaf.shape.max_def : cv.def[i];
    const uint32_t r = cv.rep[i];
    if (r == 0) {
      if (rows.size() >= num_rows_) {
        return Status::Corruption(where + " has more lists than the file has rows");
      }
      rows.emplace_back();
      std::fill(open.begin(), open.end(), nullptr);
      open[1] = &rows.back();
    } else if (rows.empty() || open[r] == nullptr) {
      return Status::Corruption(where + " continues a list before starting one");
    }
    // A new element of the depth-max(r,1) list, and new lists below it down to this entry.
    for (size_t k = std::max<uint32_t>(r, 1); k <= depth; ++k) {
      if (d < elem_def[k]) {
        if (k > std::max<uint32_t>(r, 1) || r == 0) break;  // an empty or null list
        return Status::Corruption(where + " continues a list without an element");
      }
      if (k == depth) {
        if (d != leaf.shape.max_def) return Status::NotSupported(where + " holds a null element");
        if (v >= cv.doubles.size()) {
          return Status::Corruption(where + " has fewer values than levels");
        }
        open[k]->values.push_back(cv.doubles[v++]);
      } else {
        open[k]->lists.emplace_back();
        open[k + 1] = &open[k]->lists.back();
        for (size_t j = k + 2; j <= depth; ++j) open[j] = nullptr;
      }
    }
  }
  if (rows.size() != num_rows_) {
    return Status::Corruption(where + " has " + std::to_string(rows.size()) + " lists for " +
                              std::to_string(num_rows_) + " rows");
  }
  return rows;
}

}  // namespace packfs
