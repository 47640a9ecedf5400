// RemoteShardSource: ShardSource over HttpClient ranged GETs.
#include "core/remote_source.h"

#include <algorithm>

namespace packfs {

Result<std::unique_ptr<RemoteShardSource>> RemoteShardSource::Open(
    std::shared_ptr<const HttpClient> client, std::string url, std::string display_name) {
  auto info = client->Head(url);
  if (!info.ok()) return info.status().WithPrefix(display_name);
  return FromKnown(std::move(client), std::move(url), std::move(display_name), info->size,
                   info->etag);
}

std::unique_ptr<RemoteShardSource> RemoteShardSource::FromKnown(
    std::shared_ptr<const HttpClient> client, std::string url, std::string display_name,
    uint64_t size, std::string etag) {
  return std::unique_ptr<RemoteShardSource>(new RemoteShardSource(
      std::move(client), std::move(url), std::move(display_name), size, std::move(etag)));
}

Result<size_t> RemoteShardSource::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  if (offset >= size_ || buf.empty()) return size_t{0};
  size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size_ - offset));
  auto got = client_->GetRange(url_, offset, buf.first(want), etag_);
  if (!got.ok()) return got.status().WithPrefix(name_);
  if (*got != want) {
    return Status::Corruption(name_ + ": " + url_ + " now ends before byte " +
                              std::to_string(offset + want) + " (size was " +
                              std::to_string(size_) + " when opened); the object changed");
  }
  return *got;
}

}  // namespace packfs
