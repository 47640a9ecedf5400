// Local file header and data descriptor decoding over ShardSource reads.
#include "core/format/zip_local_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/base/byte_reader.h"
#include "core/base/crc32.h"
#include "core/format/zip_format.h"

namespace packfs {
namespace {

using namespace packfs::zip;

// Room for a typical local extra (ZIP64 20 bytes, UT 9-13, Unix 11-15, alignment padding) so
// most headers need one read.
constexpr size_t kExtraSlack = 256;

}  // namespace

Result<LocalHeader> ReadLocal(const ShardSource& src, uint64_t offset, size_t name_hint) {
  if (offset > src.size() || src.size() - offset < kLocalHeaderSize) {
    return Status::Corruption("local header at offset " + std::to_string(offset) +
                              " is cut off by the end of the file");
  }
  const uint64_t want = std::min<uint64_t>(kLocalHeaderSize + name_hint + kExtraSlack,
                                           src.size() - offset);
  // Most headers fit on the stack: no allocation per member on the indexing hot path.
  std::array<uint8_t, 512> small;
  std::vector<uint8_t> large;
  std::span<uint8_t> buf;
  if (want <= small.size()) {
    buf = std::span<uint8_t>(small.data(), static_cast<size_t>(want));
  } else {
    large.resize(static_cast<size_t>(want));
    buf = large;
  }
  PACKFS_RETURN_IF_ERROR(ReadExactly(src, offset, buf, "a local header"));

  ByteReader r(buf);
  LocalHeader h;
  if (r.U32() != kLocalSig) {
    return Status::Corruption("no local header signature at offset " + std::to_string(offset));
  }
  r.Skip(2);  // version needed
  h.flags = r.U16();
  h.method = r.U16();
  r.Skip(4);  // DOS time and date
  h.crc32 = r.U32();
  const uint32_t csize32 = r.U32();
  const uint32_t usize32 = r.U32();
  const uint16_t name_len = r.U16();
  const uint16_t extra_len = r.U16();
  const uint64_t total = uint64_t{kLocalHeaderSize} + name_len + extra_len;
  if (total > src.size() - offset) {
    return Status::Corruption("local header at offset " + std::to_string(offset) +
                              " (name and extra) runs past the end of the file");
  }
  if (total > buf.size()) {  // a long extra: read the whole header again
    large.resize(static_cast<size_t>(total));
    buf = large;
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, offset, buf, "a local header"));
    r = ByteReader(buf);
    r.Skip(kLocalHeaderSize);
  }
  h.name = std::string(r.Chars(name_len));
  ByteReader extra(r.Bytes(extra_len));
  if (!r.ok()) return Status::Corruption("local header at offset " + std::to_string(offset) + " is cut off");
  h.data_offset = offset + total;

  h.compressed_size = csize32;
  h.size = usize32;
  const bool masked = csize32 == k32Max || usize32 == k32Max;
  bool z64_found = false;
  while (extra.remaining() >= 4) {
    const uint16_t id = extra.U16();
    const uint16_t len = extra.U16();
    ByteReader field(extra.Bytes(len));
    if (!extra.ok()) break;
    if (id == kExtraZip64 && masked) {
      // In a local header the ZIP64 extra holds both sizes (APPNOTE 4.5.3), uncompressed first.
      const uint64_t u = field.U64();
      const uint64_t c = field.U64();
      if (field.ok()) {
        h.size = u;
        h.compressed_size = c;
        z64_found = true;
      }
    }
  }
  // Anything left over must be a short run of zero padding (old zipalign); otherwise the extra
  // length is damaged and the data offset cannot be trusted.
  if (!extra.ok()) {
    h.extra_well_formed = false;
  } else if (extra.remaining() > 0) {
    for (uint8_t b : extra.Bytes(extra.remaining())) {
      if (b != 0) h.extra_well_formed = false;
    }
  }
  h.sizes_masked = masked;
  if (masked && !z64_found) h.sizes_known = false;
  return h;
}

ReadWindow::ReadWindow(const ShardSource& src, std::span<const uint64_t> sorted_headers,
                       size_t window_bytes)
    : src_(src), headers_(sorted_headers), window_bytes_(window_bytes) {}

uint64_t ReadWindow::fills() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fills_;
}

bool ReadWindow::DenseAfter(uint64_t offset) const {
  auto first = std::lower_bound(headers_.begin(), headers_.end(), offset);
  const size_t after = static_cast<size_t>(headers_.end() - first);
  return after > kMinHeadersPerWindow && first[kMinHeadersPerWindow] - offset < window_bytes_;
}

Result<size_t> ReadWindow::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto inside = [&] {
    return offset >= start_ && offset - start_ <= window_.size() &&
           buf.size() <= window_.size() - (offset - start_);
  };
  if (!inside() && buf.size() < window_bytes_ / 2 && offset < src_.size() && DenseAfter(offset)) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(window_bytes_, src_.size() - offset));
    window_.resize(want);
    Result<size_t> got = src_.ReadAt(offset, window_);
    if (got.ok() && *got == want) {
      start_ = offset;
      ++fills_;
    } else {
      window_.clear();  // fall back to the direct read below, which reports its own errors
    }
  }
  if (!window_.empty() && inside()) {
    // Within the window, a request past the end of the source is cut there, as ReadAt must.
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), src_.size() - offset));
    if (n > 0) std::memcpy(buf.data(), window_.data() + (offset - start_), n);
    return n;
  }
  return src_.ReadAt(offset, buf);
}

Result<size_t> DataDescriptorLength(const ShardSource& src, uint64_t at, uint64_t limit,
                                    uint32_t crc32, uint64_t size) {
  if (at > limit) return size_t{0};
  std::array<uint8_t, 24> buf{};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), limit - at));
  std::span<uint8_t> got(buf.data(), n);
  PACKFS_RETURN_IF_ERROR(ReadExactly(src, at, got, "a data descriptor"));
  // Signature optional, sizes 4 or 8 bytes: try all four shapes.
  for (int with_sig = 1; with_sig >= 0; --with_sig) {
    for (int wide = 0; wide <= 1; ++wide) {
      ByteReader r(got);
      if (with_sig && r.U32() != kDataDescriptorSig) continue;
      const uint32_t c = r.U32();
      const uint64_t cs = wide ? r.U64() : r.U32();
      const uint64_t us = wide ? r.U64() : r.U32();
      if (r.ok() && c == crc32 && cs == size && us == size) return r.pos();
    }
  }
  return size_t{0};
}

Result<uint32_t> CrcOfRange(const ShardSource& src, uint64_t offset, uint64_t size) {
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(size, 1 << 20)));
  uint32_t crc = 0;
  while (size > 0) {
    std::span<uint8_t> chunk(buf.data(), static_cast<size_t>(std::min<uint64_t>(size, buf.size())));
    PACKFS_RETURN_IF_ERROR(ReadExactly(src, offset, chunk, "member data"));
    crc = Crc32(crc, chunk.data(), chunk.size());
    offset += chunk.size();
    size -= chunk.size();
  }
  return crc;
}

}  // namespace packfs
