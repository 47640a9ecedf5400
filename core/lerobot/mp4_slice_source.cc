// Mp4SliceSource: head bytes from memory, extent bytes from the base source.
#include "core/lerobot/mp4_slice_source.h"

#include <algorithm>
#include <cstring>

namespace packfs {

Mp4SliceSource::Mp4SliceSource(std::string name, std::shared_ptr<const ShardSource> base,
                               Mp4Slice slice)
    : name_(std::move(name)), base_(std::move(base)), slice_(std::move(slice)) {
  uint64_t pos = slice_.head.size();
  starts_.reserve(slice_.extents.size());
  for (const auto& e : slice_.extents) {
    starts_.push_back(pos);
    pos += e.length;
  }
  size_ = pos;
}

Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>>
Mp4SliceSource::MapToFile(uint64_t offset, uint64_t length) const {
  using Mapped = std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>;
  if (offset < slice_.head.size() || offset >= size_ || length > size_ - offset) return Mapped();
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  if (it == starts_.begin()) return Mapped();
  const size_t k = static_cast<size_t>(it - starts_.begin()) - 1;
  const Mp4Extent& e = slice_.extents[k];
  const uint64_t in = offset - starts_[k];
  if (length > e.length - in) return Mapped();  // straddles two extents: copy instead
  return base_->MapToFile(e.source_offset + in, length);
}

Result<size_t> Mp4SliceSource::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  if (offset >= size_) return size_t{0};
  size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size_ - offset));
  size_t done = 0;
  const auto& head = slice_.head;
  if (offset < head.size()) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(want, head.size() - offset));
    std::memcpy(buf.data(), head.data() + offset, n);
    done = n;
  }
  // The extent holding the first byte after the head part, then onwards.
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset + done);
  size_t k = it == starts_.begin() ? 0 : static_cast<size_t>(it - starts_.begin()) - 1;
  while (done < want && k < starts_.size()) {
    const Mp4Extent& e = slice_.extents[k];
    uint64_t in = offset + done - starts_[k];
    size_t n = static_cast<size_t>(std::min<uint64_t>(want - done, e.length - in));
    PACKFS_RETURN_IF_ERROR(ReadExactly(*base_, e.source_offset + in, buf.subspan(done, n),
                                       "a sliced MP4 extent"));
    done += n;
    ++k;
  }
  return done;
}

}  // namespace packfs
