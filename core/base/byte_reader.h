// Bounds-checked decoding over a byte span, little-endian (ByteReader: zip, parquet) or big-endian
// (BeReader: MP4), and the little-endian appender for writers. A reader never reads past its
// span: a read that would overrun sets a sticky failure flag and returns 0, so decoders check
// ok() once after a group of fields. Thread-compatible.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace packfs {

enum class Endian { kLittle, kBig };

template <Endian E>
class BasicByteReader {
 public:
  explicit BasicByteReader(std::span<const uint8_t> data) : data_(data) {}

  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok_ ? data_.size() - pos_ : 0; }

  uint8_t U8() { return static_cast<uint8_t>(Take(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Take(2)); }
  uint32_t U24() { return static_cast<uint32_t>(Take(3)); }
  uint32_t U32() { return static_cast<uint32_t>(Take(4)); }
  uint64_t U64() { return Take(8); }

  // Returns the next n bytes (empty and failed if fewer remain).
  std::span<const uint8_t> Bytes(size_t n) {
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return {};
    }
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view Chars(size_t n) {
    auto b = Bytes(n);
    return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
  }
  void Skip(size_t n) { (void)Bytes(n); }

 private:
  uint64_t Take(size_t n) {
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      if constexpr (E == Endian::kLittle) {
        v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
      } else {
        v = (v << 8) | data_[pos_ + i];
      }
    }
    pos_ += n;
    return v;
  }

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool ok_ = true;
};
using ByteReader = BasicByteReader<Endian::kLittle>;
using BeReader = BasicByteReader<Endian::kBig>;

// Appends little-endian fields to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) { Put(v, 2); }
  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  void Bytes(std::string_view s) { out_->insert(out_->end(), s.begin(), s.end()); }
  void Zeros(size_t n) { out_->insert(out_->end(), n, 0); }

 private:
  void Put(uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) out_->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>* out_;
};

}  // namespace packfs
