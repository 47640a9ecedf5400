// ISO BMFF (MP4) box plumbing: big-endian decoding over spans, box headers (32-bit, 64-bit and
// "to end" sizes) read from a ShardSource or walked inside an in-memory parent, and a writer that
// appends boxes and patches their sizes. Everything is bounds-checked; nothing here allocates more
// than the caller's buffers hold. Stateless functions and value types: thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/byte_reader.h"
#include "core/base/shard_source.h"
#include "core/base/status.h"

namespace packfs {

constexpr uint32_t FourCC(const char (&s)[5]) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[0])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[3]));
}
// "moov" style text for messages (non-printable bytes as '?').
std::string FourCCText(uint32_t type);

// A box found in a file: where it starts, how long its header is, and its total size.
struct BoxHeader {
  uint32_t type = 0;
  uint64_t offset = 0;       // of the size field
  uint64_t header_size = 0;  // 8, or 16 with a 64-bit size
  uint64_t size = 0;         // header + payload
  uint64_t payload_offset() const { return offset + header_size; }
  uint64_t payload_size() const { return size - header_size; }
};

// Reads the header of the box at `offset` in src whose parent ends at `end`. A size of 0 means "to
// the end of the parent". Corruption (naming src) when the box does not fit in [offset, end).
Result<BoxHeader> ReadBoxHeader(const ShardSource& src, uint64_t offset, uint64_t end);

// A box inside an in-memory parent payload.
struct Box {
  uint32_t type = 0;
  std::span<const uint8_t> whole;    // header + payload
  std::span<const uint8_t> payload;  // after the header
};

// Splits `payload` into its child boxes. `what` and `file` name the parent in errors.
Result<std::vector<Box>> ChildBoxes(std::span<const uint8_t> payload, const std::string& file,
                                    const char* what);
// The first child of the given type, or nullptr.
const Box* FindBox(const std::vector<Box>& boxes, uint32_t type);

// Appends big-endian fields and nested boxes to a byte vector.
class BoxWriter {
 public:
  explicit BoxWriter(std::vector<uint8_t>* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) { Put(v, 2); }
  void U24(uint32_t v) { Put(v, 3); }
  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  void Bytes(std::span<const uint8_t> b) { out_->insert(out_->end(), b.begin(), b.end()); }
  // Starts a box (32-bit size patched by End); returns its start for End.
  size_t Begin(uint32_t type) {
    size_t start = out_->size();
    U32(0);
    U32(type);
    return start;
  }
  // Starts a full box (version + flags).
  size_t BeginFull(uint32_t type, uint8_t version, uint32_t flags) {
    size_t start = Begin(type);
    U8(version);
    U24(flags);
    return start;
  }
  void PatchU32(size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i) (*out_)[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  }
  void End(size_t start);  // patches the size of the box begun at `start`
  size_t size() const { return out_->size(); }

 private:
  void Put(uint64_t v, size_t n) {
    for (size_t i = n; i-- > 0;) out_->push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>* out_;
};

}  // namespace packfs
