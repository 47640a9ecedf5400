// Page decoding for Parquet column chunks: the page loop (v1 and v2 data pages, the dictionary),
// RLE/bit-packed hybrid levels, dictionary indices and booleans, PLAIN values, and dispatch to the
// other value encodings. Every count read from the file is checked against the bytes present or
// the caller's limits before anything is allocated.
#include "core/lerobot/parquet_pages.h"

#include <cstring>
#include <optional>
#include <utility>

#include "core/base/byte_reader.h"
#include "core/lerobot/parquet_encodings.h"

namespace packfs::parquet {
namespace {

uint32_t BitWidth(uint32_t max_level) {
  uint32_t w = 0;
  while (max_level != 0) {
    ++w;
    max_level >>= 1;
  }
  return w;
}

// The RLE/bit-packed hybrid of the Parquet spec: runs of (varint header, value) or groups of 8
// bit-packed values, LSB first.
class RleDecoder {
 public:
  RleDecoder(std::span<const uint8_t> data, uint32_t bit_width) : d_(data), width_(bit_width) {}

  // Appends n values to *out, or returns false if the data ends early or is malformed.
  bool Get(uint64_t n, std::vector<uint32_t>* out) {
    while (n > 0) {
      if (run_left_ == 0 && packed_left_ == 0 && !NextRun()) return false;
      if (run_left_ > 0) {
        uint64_t k = std::min(n, run_left_);
        out->insert(out->end(), k, run_value_);
        run_left_ -= k;
        n -= k;
      } else {
        while (packed_left_ > 0 && n > 0) {
          out->push_back(ReadPacked());
          --packed_left_;
          --n;
        }
      }
    }
    return true;
  }

 private:
  bool NextRun() {
    uint64_t header = 0;
    for (int shift = 0;; shift += 7) {
      if (pos_ >= d_.size() || shift > 35) return false;
      uint8_t b = d_[pos_++];
      header |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    if (header & 1) {
      uint64_t groups = header >> 1;
      // Bit-packed values must all be present: groups * 8 values of width_ bits.
      uint64_t bytes = groups * width_;
      if (groups == 0 || bytes > d_.size() - pos_) return false;
      packed_left_ = groups * 8;
      bit_pos_ = pos_ * 8;
      pos_ += bytes;
      return true;
    }
    run_left_ = header >> 1;
    uint32_t nbytes = (width_ + 7) / 8;
    if (run_left_ == 0 || nbytes > d_.size() - pos_) return false;
    uint64_t v = 0;
    for (uint32_t i = 0; i < nbytes; ++i) v |= static_cast<uint64_t>(d_[pos_ + i]) << (8 * i);
    pos_ += nbytes;
    if (width_ < 32 && (v >> width_) != 0) return false;
    run_value_ = static_cast<uint32_t>(v);
    return true;
  }

  uint32_t ReadPacked() {
    uint64_t v = 0;
    for (uint32_t i = 0; i < width_; ++i, ++bit_pos_) {
      uint64_t bit = (d_[bit_pos_ / 8] >> (bit_pos_ % 8)) & 1;
      v |= bit << i;
    }
    return static_cast<uint32_t>(v);
  }

  std::span<const uint8_t> d_;
  uint32_t width_;
  size_t pos_ = 0;
  uint64_t run_left_ = 0;
  uint32_t run_value_ = 0;
  uint64_t packed_left_ = 0;
  uint64_t bit_pos_ = 0;
};

// Appends n levels from an RLE/bit-packed hybrid run of exactly `data`, each at most max_level.
Status DecodeRleLevels(std::span<const uint8_t> data, uint32_t max_level, uint64_t n,
                       const char* what, std::vector<uint32_t>* out) {
  size_t start = out->size();
  RleDecoder dec(data, BitWidth(max_level));
  if (!dec.Get(n, out)) return Status::Corruption(std::string(what) + " levels are truncated");
  for (size_t i = start; i < out->size(); ++i) {
    if ((*out)[i] > max_level) {
      return Status::Corruption(std::string(what) + " level " + std::to_string((*out)[i]) +
                                " exceeds the maximum " + std::to_string(max_level));
    }
  }
  return Status::OK();
}

// Decodes n levels stored v1-style (4-byte length, then RLE hybrid); advances *r.
Status DecodeLevelsV1(ByteReader* r, int32_t encoding, uint32_t max_level, uint64_t n,
                      const char* what, std::vector<uint32_t>* out) {
  if (encoding != kRle) {
    return Status::NotSupported(std::string(what) + " levels use encoding " +
                                EncodingName(encoding) + " (only RLE is supported)");
  }
  uint32_t len = r->U32();
  auto data = r->Bytes(len);
  if (!r->ok()) return Status::Corruption(std::string(what) + " levels overrun the page");
  return DecodeRleLevels(data, max_level, n, what, out);
}

// Appends n PLAIN values of `type` from *r to *out.
Status DecodePlain(ByteReader* r, int32_t type, uint64_t n, ColumnValues* out,
                   const DecodeLimits& limits, uint64_t* bytes_used) {
  auto charge = [&](uint64_t b) {
    *bytes_used += b;
    return *bytes_used <= limits.max_value_bytes;
  };
  const Status too_big = Status::NotSupported(
      "decoded values exceed the limit of " + std::to_string(limits.max_value_bytes) + " bytes");
  const Status overrun = Status::Corruption("PLAIN values overrun the page");
  switch (type) {
    case kBoolean: {
      auto bytes = r->Bytes((n + 7) / 8);
      if (!r->ok()) return overrun;
      if (!charge(8 * n)) return too_big;
      for (uint64_t i = 0; i < n; ++i) out->ints.push_back((bytes[i / 8] >> (i % 8)) & 1);
      return Status::OK();
    }
    case kInt32:
    case kFloat:
    case kInt64:
    case kDouble: {
      uint64_t w = (type == kInt32 || type == kFloat) ? 4 : 8;
      if (n > r->remaining() / w) return overrun;
      if (!charge(8 * n)) return too_big;
      for (uint64_t i = 0; i < n; ++i) {
        if (type == kInt32) {
          out->ints.push_back(static_cast<int32_t>(r->U32()));
        } else if (type == kInt64) {
          out->ints.push_back(static_cast<int64_t>(r->U64()));
        } else if (type == kFloat) {
          uint32_t u = r->U32();
          float f = 0;
          std::memcpy(&f, &u, sizeof f);
          out->doubles.push_back(f);
        } else {
          uint64_t u = r->U64();
          double d = 0;
          std::memcpy(&d, &u, sizeof d);
          out->doubles.push_back(d);
        }
      }
      return Status::OK();
    }
    case kByteArray: {
      if (n > r->remaining() / 4) return overrun;  // each value has a 4-byte length
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t len = r->U32();
        auto s = r->Chars(len);
        if (!r->ok()) return overrun;
        if (!charge(len)) return too_big;
        out->strings.emplace_back(s);
      }
      return Status::OK();
    }
    default:
      return Status::NotSupported("physical type " + TypeName(type) + " is not supported");
  }
}

uint64_t DictSize(const ColumnValues& dict, int32_t type) {
  if (type == kByteArray) return dict.strings.size();
  if (type == kFloat || type == kDouble) return dict.doubles.size();
  return dict.ints.size();
}

// Appends n dictionary-encoded values (bit width byte, then RLE hybrid indices).
Status DecodeDictIndices(ByteReader* r, int32_t type, uint64_t n, const ColumnValues& dict,
                         ColumnValues* out, const DecodeLimits& limits, uint64_t* bytes_used) {
  if (n == 0) return Status::OK();
  uint8_t width = r->U8();
  if (!r->ok() || width > 32) return Status::Corruption("bad dictionary index bit width");
  std::vector<uint32_t> idx;
  idx.reserve(n);  // n <= max_values, checked by the caller
  RleDecoder dec(r->Bytes(r->remaining()), width);
  if (!dec.Get(n, &idx)) return Status::Corruption("dictionary indices are truncated");
  const uint64_t size = DictSize(dict, type);
  for (uint32_t i : idx) {
    if (i >= size) {
      return Status::Corruption("dictionary index " + std::to_string(i) + " out of range (" +
                                std::to_string(size) + " entries)");
    }
    if (type == kByteArray) {
      *bytes_used += dict.strings[i].size();
      if (*bytes_used > limits.max_value_bytes) {
        return Status::NotSupported("decoded values exceed the limit of " +
                                    std::to_string(limits.max_value_bytes) + " bytes");
      }
      out->strings.push_back(dict.strings[i]);
    } else if (type == kFloat || type == kDouble) {
      out->doubles.push_back(dict.doubles[i]);
    } else {
      out->ints.push_back(dict.ints[i]);
    }
  }
  return Status::OK();
}

// Appends n BOOLEAN values stored as RLE: a 4-byte length, then a 1-bit RLE/bit-packed hybrid
// (the length prefix is there in v1 and v2 pages alike).
Status DecodeRleBooleans(ByteReader* r, uint64_t n, ColumnValues* out, const DecodeLimits& limits,
                         uint64_t* bytes_used) {
  const uint32_t len = r->U32();
  auto data = r->Bytes(len);
  if (!r->ok()) return Status::Corruption("RLE booleans overrun the page");
  *bytes_used += 8 * n;
  if (*bytes_used > limits.max_value_bytes) {
    return Status::NotSupported("decoded values exceed the limit of " +
                                std::to_string(limits.max_value_bytes) + " bytes");
  }
  std::vector<uint32_t> bits;
  bits.reserve(n);
  RleDecoder dec(data, 1);
  if (!dec.Get(n, &bits)) return Status::Corruption("RLE booleans are truncated");
  out->ints.insert(out->ints.end(), bits.begin(), bits.end());
  return Status::OK();
}

// Appends the n present (non-null) values of one data page, held in `data` with `encoding`.
Status DecodeValues(std::span<const uint8_t> data, int32_t encoding, int32_t type, uint64_t n,
                    const std::optional<ColumnValues>& dict, ColumnValues* out,
                    const DecodeLimits& limits, uint64_t* bytes_used) {
  if (n == 0) return Status::OK();  // an all-null page: writers may leave the values empty
  const auto wrong_type = [&] {
    return Status::NotSupported("value encoding " + EncodingName(encoding) + " for " +
                                TypeName(type) + " values is not supported");
  };
  ByteReader r(data);
  switch (encoding) {
    case kPlain: return DecodePlain(&r, type, n, out, limits, bytes_used);
    case kPlainDictionary:
    case kRleDictionary:
      if (!dict) return Status::Corruption("dictionary-encoded page without a dictionary page");
      return DecodeDictIndices(&r, type, n, *dict, out, limits, bytes_used);
    case kRle:
      if (type != kBoolean) return wrong_type();
      return DecodeRleBooleans(&r, n, out, limits, bytes_used);
    case kDeltaBinaryPacked:
      if (type != kInt32 && type != kInt64) return wrong_type();
      return DecodeDeltaBinaryPacked(data, n, type == kInt32, limits.max_value_bytes, bytes_used,
                                     &out->ints)
          .status();
    case kDeltaLengthByteArray:
      if (type != kByteArray) return wrong_type();
      return DecodeDeltaLengthByteArray(data, n, limits.max_value_bytes, bytes_used,
                                        &out->strings)
          .status();
    case kDeltaByteArray:
      if (type != kByteArray) return wrong_type();
      return DecodeDeltaByteArray(data, n, limits.max_value_bytes, bytes_used, &out->strings)
          .status();
    case kByteStreamSplit: {
      if (type != kInt32 && type != kInt64 && type != kFloat && type != kDouble) {
        return wrong_type();
      }
      std::vector<uint8_t> plain;
      const size_t width = (type == kInt32 || type == kFloat) ? 4 : 8;
      PACKFS_RETURN_IF_ERROR(UnsplitByteStreams(data, n, width, &plain));
      ByteReader pr(plain);
      return DecodePlain(&pr, type, n, out, limits, bytes_used);
    }
    default:
      return Status::NotSupported("value encoding " + EncodingName(encoding) +
                                  " is not supported");
  }
}

// Counts the entries of def[start..] at max_def: the values present in a page.
uint64_t CountPresent(const std::vector<uint32_t>& def, size_t start, uint32_t max_def) {
  uint64_t present = 0;
  for (size_t i = start; i < def.size(); ++i) present += def[i] == max_def;
  return present;
}

// Checks a data page's level count against what the column chunk has left.
Status CheckPageValues(int32_t num_values, uint64_t left) {
  if (num_values < 0 || static_cast<uint64_t>(num_values) > left) {
    return Status::Corruption("data page declares " + std::to_string(num_values) +
                              " values, the column chunk has " + std::to_string(left) + " left");
  }
  return Status::OK();
}

// A DATA_PAGE (v1): levels and values compressed together, levels with length prefixes.
Status DecodeDataPageV1(std::span<const uint8_t> body, const PageHeader& h,
                        const ColumnMetaData& meta, const LeafShape& shape, uint64_t left,
                        const std::optional<ColumnValues>& dict, const DecodeLimits& limits,
                        ColumnValues* out, uint64_t* bytes_used, std::vector<uint8_t>* storage) {
  if (!h.data) return Status::Corruption("data page without its header");
  const DataPageHeader& dh = *h.data;
  PACKFS_RETURN_IF_ERROR(CheckPageValues(dh.num_values, left));
  const uint64_t n = static_cast<uint64_t>(dh.num_values);
  PACKFS_ASSIGN_OR_RETURN(auto data, Decompress(body, meta.codec, h.uncompressed_page_size,
                                                limits.max_page_bytes, storage));
  ByteReader r(data);
  if (shape.max_rep > 0) {
    PACKFS_RETURN_IF_ERROR(DecodeLevelsV1(&r, dh.repetition_level_encoding, shape.max_rep, n,
                                          "repetition", &out->rep));
  }
  uint64_t present = n;
  if (shape.max_def > 0) {
    const size_t start = out->def.size();
    PACKFS_RETURN_IF_ERROR(DecodeLevelsV1(&r, dh.definition_level_encoding, shape.max_def, n,
                                          "definition", &out->def));
    present = CountPresent(out->def, start, shape.max_def);
  }
  PACKFS_RETURN_IF_ERROR(DecodeValues(data.subspan(r.pos()), dh.encoding, shape.type, present,
                                      dict, out, limits, bytes_used));
  out->num_levels += n;
  return Status::OK();
}

// A DATA_PAGE_V2: repetition levels, then definition levels, both uncompressed RLE hybrids
// without length prefixes, then the values, compressed only when is_compressed says so. The
// page sizes count the levels too.
Status DecodeDataPageV2(std::span<const uint8_t> body, const PageHeader& h,
                        const ColumnMetaData& meta, const LeafShape& shape, uint64_t left,
                        const std::optional<ColumnValues>& dict, const DecodeLimits& limits,
                        ColumnValues* out, uint64_t* bytes_used, std::vector<uint8_t>* storage) {
  if (!h.data_v2) return Status::Corruption("DATA_PAGE_V2 without its header");
  const DataPageHeaderV2& dh = *h.data_v2;
  PACKFS_RETURN_IF_ERROR(CheckPageValues(dh.num_values, left));
  const uint64_t n = static_cast<uint64_t>(dh.num_values);
  if (dh.num_nulls < 0 || dh.num_nulls > dh.num_values || dh.num_rows < 0) {
    return Status::Corruption("DATA_PAGE_V2 declares " + std::to_string(dh.num_nulls) +
                              " nulls and " + std::to_string(dh.num_rows) + " rows for " +
                              std::to_string(dh.num_values) + " values");
  }
  const int64_t rep_len = dh.repetition_levels_byte_length;
  const int64_t def_len = dh.definition_levels_byte_length;
  if (rep_len < 0 || def_len < 0 || static_cast<uint64_t>(rep_len + def_len) > body.size() ||
      rep_len + def_len > h.uncompressed_page_size) {
    return Status::Corruption("DATA_PAGE_V2 levels of " + std::to_string(rep_len) + " + " +
                              std::to_string(def_len) + " bytes overrun the page of " +
                              std::to_string(body.size()) + " bytes");
  }
  const size_t levels = static_cast<size_t>(rep_len + def_len);
  if (shape.max_rep > 0) {
    PACKFS_RETURN_IF_ERROR(DecodeRleLevels(body.first(static_cast<size_t>(rep_len)),
                                           shape.max_rep, n, "repetition", &out->rep));
  }
  uint64_t present = n;
  if (shape.max_def > 0) {
    const size_t start = out->def.size();
    PACKFS_RETURN_IF_ERROR(
        DecodeRleLevels(body.subspan(static_cast<size_t>(rep_len), static_cast<size_t>(def_len)),
                        shape.max_def, n, "definition", &out->def));
    present = CountPresent(out->def, start, shape.max_def);
  }
  std::span<const uint8_t> values = body.subspan(levels);
  const int64_t values_size = int64_t{h.uncompressed_page_size} - rep_len - def_len;
  if (dh.is_compressed && !(values.empty() && values_size == 0)) {
    PACKFS_ASSIGN_OR_RETURN(values, Decompress(values, meta.codec, values_size,
                                               limits.max_page_bytes, storage));
  }
  PACKFS_RETURN_IF_ERROR(
      DecodeValues(values, dh.encoding, shape.type, present, dict, out, limits, bytes_used));
  out->num_levels += n;
  return Status::OK();
}

}  // namespace

std::string EncodingName(int32_t encoding) {
  static constexpr const char* kNames[] = {"PLAIN",
                                           "GROUP_VAR_INT",
                                           "PLAIN_DICTIONARY",
                                           "RLE",
                                           "BIT_PACKED",
                                           "DELTA_BINARY_PACKED",
                                           "DELTA_LENGTH_BYTE_ARRAY",
                                           "DELTA_BYTE_ARRAY",
                                           "RLE_DICTIONARY",
                                           "BYTE_STREAM_SPLIT"};
  if (encoding >= 0 && encoding < 10) return kNames[encoding];
  return "#" + std::to_string(encoding);
}

std::string TypeName(int32_t type) {
  static constexpr const char* kNames[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                           "FLOAT",   "DOUBLE", "BYTE_ARRAY",
                                           "FIXED_LEN_BYTE_ARRAY"};
  if (type >= 0 && type < 8) return kNames[type];
  return "#" + std::to_string(type);
}

Status DecodeColumnChunk(std::span<const uint8_t> chunk, const ColumnMetaData& meta,
                         const LeafShape& shape, const DecodeLimits& limits, ColumnValues* out,
                         uint64_t* bytes_used) {
  const uint64_t want = static_cast<uint64_t>(meta.num_values);  // caller checked >= 0
  uint64_t seen = 0;
  size_t pos = 0;
  std::optional<ColumnValues> dict;
  std::vector<uint8_t> storage;
  while (seen < want) {
    if (pos >= chunk.size()) {
      return Status::Corruption("column chunk ends after " + std::to_string(seen) + " of " +
                                std::to_string(want) + " values");
    }
    size_t header_size = 0;
    PACKFS_ASSIGN_OR_RETURN(PageHeader h, DecodePageHeader(chunk.subspan(pos), &header_size));
    pos += header_size;
    if (h.compressed_page_size < 0 ||
        static_cast<uint64_t>(h.compressed_page_size) > chunk.size() - pos) {
      return Status::Corruption("page of " + std::to_string(h.compressed_page_size) +
                                " bytes overruns the column chunk");
    }
    auto body = chunk.subspan(pos, static_cast<size_t>(h.compressed_page_size));
    pos += body.size();

    if (h.type == kIndexPage) continue;
    if (h.type == kDictionaryPage) {
      if (dict) return Status::Corruption("second dictionary page in a column chunk");
      if (!h.dictionary) return Status::Corruption("dictionary page without its header");
      if (h.dictionary->encoding != kPlain && h.dictionary->encoding != kPlainDictionary) {
        return Status::NotSupported("dictionary page encoding " +
                                    EncodingName(h.dictionary->encoding) + " is not supported");
      }
      if (h.dictionary->num_values < 0) return Status::Corruption("negative dictionary size");
      PACKFS_ASSIGN_OR_RETURN(auto data, Decompress(body, meta.codec, h.uncompressed_page_size,
                                                    limits.max_page_bytes, &storage));
      ByteReader r(data);
      dict.emplace();
      PACKFS_RETURN_IF_ERROR(DecodePlain(&r, shape.type,
                                         static_cast<uint64_t>(h.dictionary->num_values),
                                         &*dict, limits, bytes_used));
      continue;
    }
    const uint64_t before = out->num_levels;
    if (h.type == kDataPage) {
      PACKFS_RETURN_IF_ERROR(DecodeDataPageV1(body, h, meta, shape, want - seen, dict, limits,
                                              out, bytes_used, &storage));
    } else if (h.type == kDataPageV2) {
      PACKFS_RETURN_IF_ERROR(DecodeDataPageV2(body, h, meta, shape, want - seen, dict, limits,
                                              out, bytes_used, &storage));
    } else {
      return Status::NotSupported("page type #" + std::to_string(h.type) + " is not supported");
    }
    seen += out->num_levels - before;
  }
  return Status::OK();
}

}  // namespace packfs::parquet
