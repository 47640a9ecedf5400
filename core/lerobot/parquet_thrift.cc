// Thrift compact protocol decoding of Parquet's FileMetaData and PageHeader.
//
// The compact protocol: a struct is a sequence of field headers (one byte: field-id delta in the
// high nibble, type in the low nibble; delta 0 means a zigzag varint id follows) ending with a 0
// byte. Integers are zigzag varints, binary is varint length + bytes, lists carry size and element
// type in one byte (size 15 means a varint size follows). Unknown fields are skipped by type, with
// a nesting limit so hostile input cannot exhaust the stack.
#include "core/lerobot/parquet_thrift.h"

#include <cstring>
#include <string_view>
#include <utility>

namespace packfs::parquet {
namespace {

constexpr int kMaxDepth = 32;  // parquet.thrift nests about 5 deep; this is generous

// A cursor over compact-protocol bytes with a sticky error (first message kept).
class Compact {
 public:
  explicit Compact(std::span<const uint8_t> d) : d_(d) {}

  bool ok() const { return err_.empty(); }
  const std::string& error() const { return err_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok() ? d_.size() - pos_ : 0; }

  void Fail(std::string msg) {
    if (ok()) err_ = std::move(msg) + " at byte " + std::to_string(pos_);
  }

  uint8_t Byte() {
    if (!ok()) return 0;
    if (pos_ >= d_.size()) {
      Fail("Thrift data ends early");
      return 0;
    }
    return d_[pos_++];
  }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b = Byte();
      if (!ok()) return 0;
      if (shift == 63 && (b & 0x7e) != 0) break;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    Fail("Thrift varint too long");
    return 0;
  }

  int64_t Zigzag() {
    uint64_t u = Varint();
    return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  }

  std::string_view Binary() {
    uint64_t n = Varint();
    if (!ok()) return {};
    if (n > d_.size() - pos_) {
      Fail("Thrift string of " + std::to_string(n) + " bytes overruns the data");
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(d_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  void Skip(size_t n) {
    if (!ok()) return;
    if (n > d_.size() - pos_) {
      Fail("Thrift data ends early");
      return;
    }
    pos_ += n;
  }

  // Reads a list header; the size is checked against the bytes left (every element takes at least
  // one byte, except in a list of empty structs, which nothing in Parquet uses).
  bool ListHeader(uint8_t* elem_type, uint64_t* size) {
    uint8_t h = Byte();
    uint64_t n = h >> 4;
    if (n == 15) n = Varint();
    *elem_type = h & 0x0f;
    if (!ok()) return false;
    if (n > remaining()) {
      Fail("Thrift list of " + std::to_string(n) + " elements overruns the data");
      return false;
    }
    *size = n;
    return true;
  }

  void SkipValue(uint8_t type, int depth, bool in_list) {
    if (depth > kMaxDepth) return Fail("Thrift structures nested too deeply");
    switch (type) {
      case kTrue:
      case kFalse:
        if (in_list) Skip(1);  // list booleans take one byte; field booleans live in the header
        return;
      case kByte: return Skip(1);
      case kI16:
      case kI32:
      case kI64: (void)Varint(); return;
      case kDoubleT: return Skip(8);
      case kBinary: (void)Binary(); return;
      case kList:
      case kSet: {
        uint8_t et = 0;
        uint64_t n = 0;
        if (!ListHeader(&et, &n)) return;
        for (uint64_t i = 0; i < n && ok(); ++i) SkipValue(et, depth + 1, true);
        return;
      }
      case kMap: {
        uint64_t n = Varint();
        if (!ok() || n == 0) return;
        if (n > remaining()) return Fail("Thrift map overruns the data");
        uint8_t kv = Byte();
        for (uint64_t i = 0; i < n && ok(); ++i) {
          SkipValue(kv >> 4, depth + 1, true);
          SkipValue(kv & 0x0f, depth + 1, true);
        }
        return;
      }
      case kStruct:
        ReadStruct(depth + 1, [](int16_t, uint8_t) { return false; });
        return;
      default: return Fail("unknown Thrift type " + std::to_string(type));
    }
  }

  // Calls on_field(id, type) for each field; it returns false to have the field skipped. Within
  // on_field, a boolean field's value is `type == kTrue`.
  template <typename F>
  void ReadStruct(int depth, F&& on_field) {
    if (depth > kMaxDepth) return Fail("Thrift structures nested too deeply");
    int16_t last = 0;
    while (ok()) {
      uint8_t h = Byte();
      if (!ok() || h == kStop) return;
      uint8_t type = h & 0x0f;
      int16_t id = 0;
      if ((h >> 4) != 0) {
        id = static_cast<int16_t>(last + (h >> 4));
      } else {
        id = static_cast<int16_t>(Zigzag());
      }
      last = id;
      if (!on_field(id, type)) SkipValue(type, depth, false);
    }
  }

  // Typed reads of a field value; a wrong wire type is corruption.
  int32_t I32(uint8_t type) {
    if (type != kI32 && type != kI16 && type != kByte) {
      Fail("Thrift field has type " + std::to_string(type) + ", expected an integer");
      return 0;
    }
    if (type == kByte) return static_cast<int8_t>(Byte());
    int64_t v = Zigzag();
    if (v < INT32_MIN || v > INT32_MAX) {
      Fail("Thrift i32 out of range");
      return 0;
    }
    return static_cast<int32_t>(v);
  }
  int64_t I64(uint8_t type) {
    if (type != kI64 && type != kI32 && type != kI16) {
      Fail("Thrift field has type " + std::to_string(type) + ", expected an integer");
      return 0;
    }
    return Zigzag();
  }
  std::string String(uint8_t type) {
    if (type != kBinary) {
      Fail("Thrift field has type " + std::to_string(type) + ", expected a string");
      return {};
    }
    return std::string(Binary());
  }
  bool Expect(uint8_t type, uint8_t want) {
    if (type != want) Fail("Thrift field has type " + std::to_string(type) + ", expected " +
                           std::to_string(want));
    return ok();
  }

 private:
  std::span<const uint8_t> d_;
  size_t pos_ = 0;
  std::string err_;
};

SchemaElement ReadSchemaElement(Compact& c, int depth) {
  SchemaElement e;
  c.ReadStruct(depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: e.type = c.I32(t); return true;
      case 3: e.repetition = c.I32(t); return true;
      case 4: e.name = c.String(t); return true;
      case 5: e.num_children = c.I32(t); return true;
      case 6: e.converted_type = c.I32(t); return true;
      case 10:  // LogicalType union: field 3 is LIST
        if (!c.Expect(t, kStruct)) return true;
        c.ReadStruct(depth + 1, [&](int16_t lid, uint8_t) {
          if (lid == 3) e.logical_list = true;
          return false;
        });
        return true;
      default: return false;
    }
  });
  return e;
}

ColumnMetaData ReadColumnMetaData(Compact& c, int depth) {
  ColumnMetaData m;
  c.ReadStruct(depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: m.type = c.I32(t); return true;
      case 3: {
        uint8_t et = 0;
        uint64_t n = 0;
        if (!c.Expect(t, kList) || !c.ListHeader(&et, &n) || !c.Expect(et, kBinary)) return true;
        for (uint64_t i = 0; i < n && c.ok(); ++i) m.path_in_schema.push_back(c.String(et));
        return true;
      }
      case 4: m.codec = c.I32(t); return true;
      case 5: m.num_values = c.I64(t); return true;
      case 7: m.total_compressed_size = c.I64(t); return true;
      case 9: m.data_page_offset = c.I64(t); return true;
      case 11: m.dictionary_page_offset = c.I64(t); return true;
      default: return false;
    }
  });
  return m;
}

ColumnChunk ReadColumnChunk(Compact& c, int depth) {
  ColumnChunk ch;
  c.ReadStruct(depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: ch.file_path = c.String(t); return true;
      case 3:
        if (c.Expect(t, kStruct)) ch.meta = ReadColumnMetaData(c, depth + 1);
        return true;
      default: return false;
    }
  });
  return ch;
}

RowGroup ReadRowGroup(Compact& c, int depth) {
  RowGroup g;
  c.ReadStruct(depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: {
        uint8_t et = 0;
        uint64_t n = 0;
        if (!c.Expect(t, kList) || !c.ListHeader(&et, &n) || !c.Expect(et, kStruct)) return true;
        g.columns.reserve(n);  // n <= bytes left, checked by ListHeader
        for (uint64_t i = 0; i < n && c.ok(); ++i) {
          g.columns.push_back(ReadColumnChunk(c, depth + 1));
        }
        return true;
      }
      case 3: g.num_rows = c.I64(t); return true;
      default: return false;
    }
  });
  return g;
}

}  // namespace

Result<FileMetaData> DecodeFileMetaData(std::span<const uint8_t> bytes) {
  Compact c(bytes);
  FileMetaData f;
  c.ReadStruct(0, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: f.version = c.I32(t); return true;
      case 2: {
        uint8_t et = 0;
        uint64_t n = 0;
        if (!c.Expect(t, kList) || !c.ListHeader(&et, &n) || !c.Expect(et, kStruct)) return true;
        f.schema.reserve(n);
        for (uint64_t i = 0; i < n && c.ok(); ++i) f.schema.push_back(ReadSchemaElement(c, 1));
        return true;
      }
      case 3: f.num_rows = c.I64(t); return true;
      case 4: {
        uint8_t et = 0;
        uint64_t n = 0;
        if (!c.Expect(t, kList) || !c.ListHeader(&et, &n) || !c.Expect(et, kStruct)) return true;
        f.row_groups.reserve(n);
        for (uint64_t i = 0; i < n && c.ok(); ++i) f.row_groups.push_back(ReadRowGroup(c, 1));
        return true;
      }
      case 6: f.created_by = c.String(t); return true;
      default: return false;
    }
  });
  if (!c.ok()) return Status::Corruption("bad Parquet footer: " + c.error());
  return f;
}

Result<PageHeader> DecodePageHeader(std::span<const uint8_t> bytes, size_t* header_size) {
  Compact c(bytes);
  PageHeader h;
  c.ReadStruct(0, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: h.type = c.I32(t); return true;
      case 2: h.uncompressed_page_size = c.I32(t); return true;
      case 3: h.compressed_page_size = c.I32(t); return true;
      case 5: {
        if (!c.Expect(t, kStruct)) return true;
        DataPageHeader d;
        c.ReadStruct(1, [&](int16_t fid, uint8_t ft) {
          switch (fid) {
            case 1: d.num_values = c.I32(ft); return true;
            case 2: d.encoding = c.I32(ft); return true;
            case 3: d.definition_level_encoding = c.I32(ft); return true;
            case 4: d.repetition_level_encoding = c.I32(ft); return true;
            default: return false;
          }
        });
        h.data = d;
        return true;
      }
      case 7: {
        if (!c.Expect(t, kStruct)) return true;
        DictionaryPageHeader d;
        c.ReadStruct(1, [&](int16_t fid, uint8_t ft) {
          switch (fid) {
            case 1: d.num_values = c.I32(ft); return true;
            case 2: d.encoding = c.I32(ft); return true;
            default: return false;
          }
        });
        h.dictionary = d;
        return true;
      }
      case 8: {
        if (!c.Expect(t, kStruct)) return true;
        DataPageHeaderV2 d;
        c.ReadStruct(1, [&](int16_t fid, uint8_t ft) {
          switch (fid) {
            case 1: d.num_values = c.I32(ft); return true;
            case 2: d.num_nulls = c.I32(ft); return true;
            case 3: d.num_rows = c.I32(ft); return true;
            case 4: d.encoding = c.I32(ft); return true;
            case 5: d.definition_levels_byte_length = c.I32(ft); return true;
            case 6: d.repetition_levels_byte_length = c.I32(ft); return true;
            case 7:
              if (ft != kTrue && ft != kFalse) c.Fail("Thrift is_compressed is not a boolean");
              d.is_compressed = ft == kTrue;
              return true;
            default: return false;
          }
        });
        h.data_v2 = d;
        return true;
      }
      default: return false;
    }
  });
  if (!c.ok()) return Status::Corruption("bad Parquet page header: " + c.error());
  *header_size = c.pos();
  return h;
}

}  // namespace packfs::parquet
