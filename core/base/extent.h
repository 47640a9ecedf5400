// Extent: an immutable byte range with shared ownership of the memory behind it — a slice of a
// remote reader's fetched part (core/remote/block_cache.h), or a vector of its own. What a source
// lends instead of copying (ShardSource::LendMemberAt), and what a READ reply sends from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace packfs {

// Null when default-constructed. Cheap to copy.
class Extent {
 public:
  Extent() = default;
  Extent(std::nullptr_t) {}  // NOLINT: a null extent, as for a shared_ptr
  // An extent owning its vector (not counted by any cache until one adopts it).
  Extent(std::shared_ptr<const std::vector<uint8_t>> v)  // NOLINT: implicit, like the old type
      : bytes_(v ? std::span<const uint8_t>(*v) : std::span<const uint8_t>()),
        owner_(std::move(v)) {}
  Extent(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes, bool counted)
      : bytes_(bytes), owner_(std::move(owner)), counted_(counted) {}

  const std::span<const uint8_t>* operator->() const { return &bytes_; }
  const std::span<const uint8_t>& operator*() const { return bytes_; }
  explicit operator bool() const { return owner_ != nullptr; }
  // Whether the memory is a cache Buffer's (already counted toward that cache's bytes()).
  bool counted() const { return counted_; }
  // The Buffer or vector behind the bytes (tests compare owners).
  const void* owner() const { return owner_.get(); }
  // [from, from + length) of these bytes (within them), sharing their ownership.
  Extent Sub(size_t from, size_t length) const {
    return Extent(owner_, bytes_.subspan(from, length), counted_);
  }

 private:
  std::span<const uint8_t> bytes_;
  std::shared_ptr<const void> owner_;
  bool counted_ = false;
};

}  // namespace packfs
