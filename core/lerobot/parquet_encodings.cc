// DELTA_* and BYTE_STREAM_SPLIT decoding. A DELTA_BINARY_PACKED stream is a header (block size,
// miniblocks per block, value count, first value) and blocks of (min delta, one bit width per
// miniblock, bit-packed miniblocks); the last block stops after its last needed miniblock. A few
// bytes of zero-width miniblocks can stand for millions of values, so the value count is checked
// against the caller's n and bytes are charged before anything is reserved.
#include "core/lerobot/parquet_encodings.h"

#include <algorithm>

namespace packfs::parquet {
namespace {

// Writers use 128 or 256 values per block; far larger blocks only serve a hostile file.
constexpr uint64_t kMaxBlockValues = uint64_t{1} << 20;

Status TooBig(uint64_t max_bytes) {
  return Status::NotSupported("decoded values exceed the limit of " + std::to_string(max_bytes) +
                              " bytes");
}

// ULEB128 and zigzag varints over a span, with a sticky failure.
class VarintCursor {
 public:
  explicit VarintCursor(std::span<const uint8_t> d) : d_(d) {}
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return d_.size() - pos_; }

  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; ok_ && shift < 64; shift += 7) {
      if (pos_ >= d_.size()) break;
      const uint8_t b = d_[pos_++];
      if (shift == 63 && (b & 0x7e) != 0) break;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok_ = false;
    return 0;
  }
  uint64_t Zigzag() {  // two's complement bits of the signed value
    const uint64_t u = Uleb();
    return (u >> 1) ^ (~(u & 1) + 1);
  }
  std::span<const uint8_t> Take(size_t n) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return {};
    }
    auto s = d_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The `width`-bit value at bit `bit` of `d`, LSB first; the caller checked the bits are present.
uint64_t BitsAt(std::span<const uint8_t> d, uint64_t bit, uint32_t width) {
  uint64_t v = 0;
  uint32_t got = 0;
  size_t byte = static_cast<size_t>(bit / 8);
  uint32_t shift = static_cast<uint32_t>(bit % 8);
  while (got < width) {
    const uint32_t take = std::min(8 - shift, width - got);
    const uint64_t bits = (static_cast<uint64_t>(d[byte]) >> shift) & ((1u << take) - 1);
    v |= bits << got;
    got += take;
    shift = 0;
    ++byte;
  }
  return v;
}

}  // namespace

Result<size_t> DecodeDeltaBinaryPacked(std::span<const uint8_t> data, uint64_t n, bool int32,
                                       uint64_t max_bytes, uint64_t* bytes_used,
                                       std::vector<int64_t>* out) {
  VarintCursor c(data);
  const uint64_t block = c.Uleb();
  const uint64_t miniblocks = c.Uleb();
  const uint64_t total = c.Uleb();
  uint64_t value = c.Zigzag();
  if (!c.ok()) return Status::Corruption("DELTA_BINARY_PACKED header is truncated");
  if (block == 0 || block % 128 != 0 || block > kMaxBlockValues || miniblocks == 0 ||
      block % miniblocks != 0 || (block / miniblocks) % 32 != 0) {
    return Status::Corruption("DELTA_BINARY_PACKED header has a bad block layout (" +
                              std::to_string(block) + " values in " + std::to_string(miniblocks) +
                              " miniblocks)");
  }
  if (total != n) {
    return Status::Corruption("DELTA_BINARY_PACKED stream holds " + std::to_string(total) +
                              " values where the page has " + std::to_string(n));
  }
  if (n == 0) return c.pos();
  *bytes_used += 8 * n;
  if (*bytes_used > max_bytes) return TooBig(max_bytes);
  const uint64_t per_miniblock = block / miniblocks;
  const uint32_t max_width = int32 ? 32 : 64;
  auto emit = [&] {
    if (int32) value = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(value)));
    out->push_back(static_cast<int64_t>(value));
  };
  out->reserve(out->size() + n);
  emit();
  uint64_t left = n - 1;
  while (left > 0) {
    const uint64_t min_delta = c.Zigzag();
    auto widths = c.Take(static_cast<size_t>(miniblocks));
    if (!c.ok()) return Status::Corruption("DELTA_BINARY_PACKED block header is truncated");
    for (uint64_t m = 0; m < miniblocks && left > 0; ++m) {
      const uint32_t w = widths[m];
      if (w > max_width) {
        return Status::Corruption("DELTA_BINARY_PACKED miniblock of " + std::to_string(w) +
                                  "-bit deltas");
      }
      auto packed = c.Take(static_cast<size_t>(per_miniblock * w / 8));
      if (!c.ok()) return Status::Corruption("DELTA_BINARY_PACKED miniblock is truncated");
      const uint64_t k = std::min(per_miniblock, left);
      for (uint64_t j = 0; j < k; ++j) {
        value += min_delta + BitsAt(packed, j * w, w);  // wraps, as the spec requires
        emit();
      }
      left -= k;
    }
  }
  return c.pos();
}

Result<size_t> DecodeDeltaLengthByteArray(std::span<const uint8_t> data, uint64_t n,
                                          uint64_t max_bytes, uint64_t* bytes_used,
                                          std::vector<std::string>* out) {
  std::vector<int64_t> lengths;
  uint64_t length_bytes = 0;  // the lengths are scratch, charged against the same limit
  PACKFS_ASSIGN_OR_RETURN(size_t pos,
                          DecodeDeltaBinaryPacked(data, n, true, max_bytes, &length_bytes,
                                                  &lengths));
  for (int64_t len : lengths) {
    if (len < 0 || static_cast<uint64_t>(len) > data.size() - pos) {
      return Status::Corruption("DELTA_LENGTH_BYTE_ARRAY value of " + std::to_string(len) +
                                " bytes overruns the page");
    }
    *bytes_used += static_cast<uint64_t>(len);
    if (*bytes_used > max_bytes) return TooBig(max_bytes);
    out->emplace_back(reinterpret_cast<const char*>(data.data() + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
  }
  return pos;
}

Result<size_t> DecodeDeltaByteArray(std::span<const uint8_t> data, uint64_t n, uint64_t max_bytes,
                                    uint64_t* bytes_used, std::vector<std::string>* out) {
  std::vector<int64_t> prefixes;
  std::vector<int64_t> lengths;
  uint64_t scratch = 0;
  PACKFS_ASSIGN_OR_RETURN(size_t pos,
                          DecodeDeltaBinaryPacked(data, n, true, max_bytes, &scratch, &prefixes));
  PACKFS_ASSIGN_OR_RETURN(size_t used, DecodeDeltaBinaryPacked(data.subspan(pos), n, true,
                                                               max_bytes, &scratch, &lengths));
  pos += used;
  std::string previous;
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t prefix = prefixes[i];
    const int64_t len = lengths[i];
    if (prefix < 0 || static_cast<uint64_t>(prefix) > previous.size()) {
      return Status::Corruption("DELTA_BYTE_ARRAY prefix of " + std::to_string(prefix) +
                                " bytes is longer than the previous value");
    }
    if (len < 0 || static_cast<uint64_t>(len) > data.size() - pos) {
      return Status::Corruption("DELTA_BYTE_ARRAY suffix of " + std::to_string(len) +
                                " bytes overruns the page");
    }
    *bytes_used += static_cast<uint64_t>(prefix) + static_cast<uint64_t>(len);
    if (*bytes_used > max_bytes) return TooBig(max_bytes);
    previous.resize(static_cast<size_t>(prefix));
    previous.append(reinterpret_cast<const char*>(data.data() + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    out->push_back(previous);
  }
  return pos;
}

Status UnsplitByteStreams(std::span<const uint8_t> data, uint64_t n, size_t width,
                          std::vector<uint8_t>* plain) {
  if (width == 0 || n > data.size() / width || n * width != data.size()) {
    return Status::Corruption("BYTE_STREAM_SPLIT data of " + std::to_string(data.size()) +
                              " bytes does not hold " + std::to_string(n) + " values of " +
                              std::to_string(width) + " bytes");
  }
  const size_t count = static_cast<size_t>(n);
  plain->resize(data.size());
  for (size_t s = 0; s < width; ++s) {
    const uint8_t* stream = data.data() + s * count;
    for (size_t i = 0; i < count; ++i) (*plain)[i * width + s] = stream[i];
  }
  return Status::OK();
}

}  // namespace packfs::parquet
