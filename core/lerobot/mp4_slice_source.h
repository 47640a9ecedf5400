// Mp4SliceSource: a ShardSource presenting one sliced MP4 — the synthesized head (ftyp + moov +
// mdat header) followed by byte extents of a shared base source, read on demand (nothing is
// copied to disk). Immutable after construction; ReadAt is thread-safe when base's is.
// Shares ownership of `base`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/lerobot/mp4_slice.h"

namespace packfs {

class Mp4SliceSource final : public ShardSource {
 public:
  // `slice` must come from SliceMp4 over a movie parsed from `base` (its extents lie in base).
  Mp4SliceSource(std::string name, std::shared_ptr<const ShardSource> base, Mp4Slice slice);

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  // Copies head bytes and reads extent bytes from base; a base shorter than an extent (the file
  // changed) is a Corruption naming base, never silently short data.
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;

  // A range inside one extent maps to where base keeps it (when base is file-backed).
  Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>> MapToFile(
      uint64_t offset, uint64_t length) const override;

  const Mp4Slice& slice() const { return slice_; }

 private:
  std::string name_;
  std::shared_ptr<const ShardSource> base_;
  Mp4Slice slice_;
  std::vector<uint64_t> starts_;  // virtual offset of each extent
  uint64_t size_ = 0;
};

}  // namespace packfs
