// Reading one zip local file header (and, for data-descriptor members, checking the descriptor
// after the data). Private to zip_reader.cc. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"

namespace packfs {

struct LocalHeader {
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;  // from the ZIP64 extra when the 32-bit field is masked
  uint64_t size = 0;
  bool sizes_masked = false;     // 0xFFFFFFFF size fields (values from the ZIP64 extra)
  bool sizes_known = true;       // false when masked without a usable ZIP64 extra
  std::string name;
  uint64_t data_offset = 0;      // absolute
  bool extra_well_formed = true; // extra parses as (id, len, data) records filling its length
};

// A read-through window over a shard for the indexing pass: when many local headers lie close
// together (small members packed back to back), one large ReadAt fills the window and the header,
// descriptor and CRC reads of the following members are served from memory instead of one
// pread each. Reads that do not fit the current window, or that start where few headers follow
// (large members), go to the underlying source unchanged, so every check sees exactly the bytes it
// would have read directly. A failed window fill falls back to the direct read: a bad region
// beyond the bytes asked for never fails a read that would have succeeded.
// Thread-safe (a mutex guards the window), but meant for one indexing call on one thread; reads
// in ascending offset order make the best use of it. Does not own `src` or `sorted_headers`,
// which must outlive it.
class ReadWindow final : public ShardSource {
 public:
  // `sorted_headers`: absolute local header offsets in ascending order, used to decide whether
  // a window is worth filling. `window_bytes` 0 disables windowing (every read goes direct).
  ReadWindow(const ShardSource& src, std::span<const uint64_t> sorted_headers,
             size_t window_bytes);

  const std::string& name() const override { return src_.name(); }
  uint64_t size() const override { return src_.size(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;

  // Window fills so far (for tests and benchmarks).
  uint64_t fills() const;

 private:
  bool DenseAfter(uint64_t offset) const;

  const ShardSource& src_;
  std::span<const uint64_t> headers_;
  size_t window_bytes_;
  mutable std::mutex mu_;
  mutable std::vector<uint8_t> window_;  // bytes [start_, start_ + window_.size()) of src_
  mutable uint64_t start_ = 0;
  mutable uint64_t fills_ = 0;
};

// Default window: 256 KiB holds ~3,600 headers of 16-byte members (72 bytes each with a short
// name), so a 65,534-member shard needs ~20 reads instead of 65,534; one fill costs about as much
// as 10-20 small preads, hence the density threshold below.
inline constexpr size_t kDefaultReadWindow = 256 * 1024;
// A window is filled only when at least this many further headers start inside it.
inline constexpr size_t kMinHeadersPerWindow = 16;

// Reads the local header at absolute offset `offset`. `name_hint` is the name length the central
// entry expects; the header is read with one ReadAt of 30 + name_hint + 256 bytes, and a second
// read only when the local extra is longer. Corruption (with a message that does not name the
// shard; callers add it) when the header is truncated or its signature is wrong.
Result<LocalHeader> ReadLocal(const ShardSource& src, uint64_t offset, size_t name_hint);

// The length (12, 16, 20 or 24) of the data descriptor matching crc/size at absolute offset
// `at` (optional signature, crc32, then 4- or 8-byte compressed and uncompressed sizes), ending
// at or before `limit`; 0 when none matches.
Result<size_t> DataDescriptorLength(const ShardSource& src, uint64_t at, uint64_t limit,
                                    uint32_t crc32, uint64_t size);

// CRC-32 of `size` bytes at absolute offset `offset`, read in bounded chunks.
Result<uint32_t> CrcOfRange(const ShardSource& src, uint64_t offset, uint64_t size);

}  // namespace packfs
