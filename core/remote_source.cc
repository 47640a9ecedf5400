// RemoteShardSource: ShardSource over HttpClient ranged GETs, optionally through a RemoteReader.
#include "core/remote_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace packfs {

// The object version a source reads (what RemoteReader fetches and caches by). Immutable.
class RemoteShardSource::Object final : public RangeFetcher {
 public:
  Object(std::shared_ptr<const HttpClient> client, std::string url, std::string name,
         uint64_t size, std::string etag)
      : client_(std::move(client)), url_(std::move(url)), name_(std::move(name)), size_(size),
        etag_(std::move(etag)), key_(url_ + "\n" + etag_) {}

  const std::string& cache_key() const override { return key_; }
  bool persistent() const override { return !etag_.empty(); }
  uint64_t size() const override { return size_; }
  Status Fetch(uint64_t offset, std::span<uint8_t> buf,
               const std::function<void(size_t)>& progress = nullptr) const override {
    auto got = client_->GetRange(url_, offset, buf, etag_, progress);
    if (!got.ok()) return got.status().WithPrefix(name_);
    if (*got != buf.size()) {
      return Status::Corruption(name_ + ": " + url_ + " now ends before byte " +
                                std::to_string(offset + buf.size()) + " (size was " +
                                std::to_string(size_) + " when opened); the object changed");
    }
    return Status::OK();
  }

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  const std::string& etag() const { return etag_; }

 private:
  std::shared_ptr<const HttpClient> client_;
  std::string url_;
  std::string name_;
  uint64_t size_;
  std::string etag_;
  std::string key_;
};

RemoteShardSource::RemoteShardSource(std::shared_ptr<const Object> object,
                                     std::shared_ptr<RemoteReader> reader)
    : object_(std::move(object)), reader_(std::move(reader)) {}

Result<std::unique_ptr<RemoteShardSource>> RemoteShardSource::Open(
    std::shared_ptr<const HttpClient> client, std::string url, std::string display_name) {
  auto info = client->Head(url);
  if (!info.ok()) return info.status().WithPrefix(display_name);
  return FromKnown(std::move(client), std::move(url), std::move(display_name), info->size,
                   info->etag);
}

std::unique_ptr<RemoteShardSource> RemoteShardSource::FromKnown(
    std::shared_ptr<const HttpClient> client, std::string url, std::string display_name,
    uint64_t size, std::string etag, std::shared_ptr<RemoteReader> reader) {
  auto object = std::make_shared<const Object>(std::move(client), std::move(url),
                                               std::move(display_name), size, std::move(etag));
  return std::unique_ptr<RemoteShardSource>(
      new RemoteShardSource(std::move(object), std::move(reader)));
}

const std::string& RemoteShardSource::name() const { return object_->name(); }
uint64_t RemoteShardSource::size() const { return object_->size(); }
const std::string& RemoteShardSource::url() const { return object_->url(); }
const std::string& RemoteShardSource::etag() const { return object_->etag(); }

Result<size_t> RemoteShardSource::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  return ReadMemberAt(0, 0, offset, buf);
}

namespace {

// A window onto a disk-cache data file, which holds the object's bytes at their own offsets; the
// handle keeps the file open (even if the cache evicts it) for as long as the window is held.
class CachedFileSource final : public ShardSource {
 public:
  CachedFileSource(std::shared_ptr<const UniqueFd> fd, const std::string& name, uint64_t size)
      : fd_(std::move(fd)), name_(name), size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  int fd() const override { return fd_->get(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override {
    if (offset >= size_) return size_t{0};
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size_ - offset));
    size_t done = 0;
    while (done < want) {
      ssize_t k = ::pread(fd_->get(), buf.data() + done, want - done,
                          static_cast<off_t>(offset + done));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        return Status::IOError("reading the disk cache copy of " + name_ +
                               (k < 0 ? ": " + ErrnoText(errno) : ": file ends early"));
      }
      done += static_cast<size_t>(k);
    }
    return done;
  }

 private:
  std::shared_ptr<const UniqueFd> fd_;
  const std::string name_;
  const uint64_t size_;
};

}  // namespace

Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>>
RemoteShardSource::MapToFile(uint64_t offset, uint64_t length) const {
  using Mapped = std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>;
  if (!reader_) return Mapped();
  std::shared_ptr<const UniqueFd> fd = reader_->MapCached(*object_, offset, length);
  if (!fd) return Mapped();
  return Mapped(std::make_pair(
      std::make_shared<CachedFileSource>(std::move(fd), object_->name(), object_->size()), offset));
}

Result<size_t> RemoteShardSource::ReadMemberAt(uint64_t member_begin, uint64_t member_end,
                                               uint64_t offset, std::span<uint8_t> buf) const {
  const uint64_t size = object_->size();
  if (offset >= size || buf.empty()) return size_t{0};
  if (reader_) return reader_->Read(object_, member_begin, member_end, offset, buf);
  const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - offset));
  PACKFS_RETURN_IF_ERROR(object_->Fetch(offset, buf.first(want)));
  return want;
}

}  // namespace packfs
