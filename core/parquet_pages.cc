// Page decoding for Parquet column chunks: decompression, RLE/bit-packed hybrid levels and
// dictionary indices, PLAIN values. Every count read from the file is checked against the bytes
// present or the caller's limits before anything is allocated.
#include "core/parquet_pages.h"

#include <snappy.h>

#include <cstring>
#include <optional>
#include <utility>

#include "core/byte_reader.h"

namespace packfs::parquet {
namespace {

// Snappy expands at most ~21x (a 3-byte copy op yields 64 bytes); a page declaring more than this
// is hostile, so the check runs before the output buffer is allocated.
constexpr uint64_t kMaxSnappyRatio = 32;

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

// Decodes n levels stored v1-style (4-byte length, then RLE hybrid); advances *r.
Status DecodeLevels(ByteReader* r, int32_t encoding, uint32_t max_level, uint64_t n,
                    const char* what, std::vector<uint32_t>* out) {
  if (encoding != kRle) {
    return Status::NotSupported(std::string(what) + " levels use encoding " +
                                EncodingName(encoding) + " (only RLE is supported)");
  }
  uint32_t len = r->U32();
  auto data = r->Bytes(len);
  if (!r->ok()) return Status::Corruption(std::string(what) + " levels overrun the page");
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

// Returns the page body uncompressed (in *storage when decompression was needed).
Result<std::span<const uint8_t>> Decompress(std::span<const uint8_t> body, int32_t codec,
                                            int32_t uncompressed_size,
                                            std::vector<uint8_t>* storage) {
  if (codec == kUncompressed) return body;
  if (codec != kSnappy) {
    return Status::NotSupported("compression codec " + CodecName(codec) +
                                " is not supported (only UNCOMPRESSED and SNAPPY)");
  }
  size_t len = 0;
  const char* in = reinterpret_cast<const char*>(body.data());
  if (!snappy::GetUncompressedLength(in, body.size(), &len)) {
    return Status::Corruption("bad SNAPPY page");
  }
  if (uncompressed_size < 0 || len != static_cast<uint64_t>(uncompressed_size) ||
      len > body.size() * kMaxSnappyRatio + 64) {
    return Status::Corruption("SNAPPY page declares " + std::to_string(len) +
                              " bytes, the page header " + std::to_string(uncompressed_size));
  }
  storage->resize(len);
  if (!snappy::RawUncompress(in, body.size(), reinterpret_cast<char*>(storage->data()))) {
    return Status::Corruption("bad SNAPPY page");
  }
  return std::span<const uint8_t>(*storage);
}

}  // namespace

std::string CodecName(int32_t codec) {
  static constexpr const char* kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP",   "LZO",
                                           "BROTLI",       "LZ4",    "ZSTD",   "LZ4_RAW"};
  if (codec >= 0 && codec < 8) return kNames[codec];
  return "#" + std::to_string(codec);
}

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
                                           "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
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
    if (h.type == kDataPageV2) return Status::NotSupported("DATA_PAGE_V2 pages are not supported");
    if (h.type == kDictionaryPage) {
      if (dict) return Status::Corruption("second dictionary page in a column chunk");
      if (!h.dictionary) return Status::Corruption("dictionary page without its header");
      if (h.dictionary->encoding != kPlain && h.dictionary->encoding != kPlainDictionary) {
        return Status::NotSupported("dictionary page encoding " +
                                    EncodingName(h.dictionary->encoding) + " is not supported");
      }
      if (h.dictionary->num_values < 0) return Status::Corruption("negative dictionary size");
      PACKFS_ASSIGN_OR_RETURN(auto data,
                              Decompress(body, meta.codec, h.uncompressed_page_size, &storage));
      ByteReader r(data);
      dict.emplace();
      PACKFS_RETURN_IF_ERROR(DecodePlain(&r, shape.type,
                                         static_cast<uint64_t>(h.dictionary->num_values),
                                         &*dict, limits, bytes_used));
      continue;
    }
    if (h.type != kDataPage) {
      return Status::NotSupported("page type #" + std::to_string(h.type) + " is not supported");
    }
    if (!h.data) return Status::Corruption("data page without its header");
    const DataPageHeader& dh = *h.data;
    if (dh.num_values < 0 || static_cast<uint64_t>(dh.num_values) > want - seen) {
      return Status::Corruption("data page declares " + std::to_string(dh.num_values) +
                                " values, the column chunk has " + std::to_string(want - seen) +
                                " left");
    }
    const uint64_t n = static_cast<uint64_t>(dh.num_values);
    PACKFS_ASSIGN_OR_RETURN(auto data,
                            Decompress(body, meta.codec, h.uncompressed_page_size, &storage));
    ByteReader r(data);
    if (shape.max_rep > 0) {
      PACKFS_RETURN_IF_ERROR(DecodeLevels(&r, dh.repetition_level_encoding, shape.max_rep, n,
                                          "repetition", &out->rep));
    }
    uint64_t present = n;
    if (shape.max_def > 0) {
      size_t start = out->def.size();
      PACKFS_RETURN_IF_ERROR(DecodeLevels(&r, dh.definition_level_encoding, shape.max_def, n,
                                          "definition", &out->def));
      present = 0;
      for (size_t i = start; i < out->def.size(); ++i) present += out->def[i] == shape.max_def;
    }
    if (dh.encoding == kPlain) {
      PACKFS_RETURN_IF_ERROR(DecodePlain(&r, shape.type, present, out, limits, bytes_used));
    } else if (dh.encoding == kPlainDictionary || dh.encoding == kRleDictionary) {
      if (!dict) return Status::Corruption("dictionary-encoded page without a dictionary page");
      PACKFS_RETURN_IF_ERROR(
          DecodeDictIndices(&r, shape.type, present, *dict, out, limits, bytes_used));
    } else {
      return Status::NotSupported("value encoding " + EncodingName(dh.encoding) +
                                  " is not supported (only PLAIN and dictionary)");
    }
    seen += n;
    out->num_levels += n;
  }
  return Status::OK();
}

}  // namespace packfs::parquet
