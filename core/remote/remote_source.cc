// RemoteShardSource: ShardSource over HttpClient ranged GETs, optionally through a RemoteReader.
#include "core/remote/remote_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "core/catalog/catalog.h"

namespace packfs {

std::optional<std::string> EtagPins::Get(uint32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pins_.find(shard);
  if (it == pins_.end()) return std::nullopt;
  return it->second;
}

std::string EtagPins::Pin(uint32_t shard, const std::string& etag) {
  std::lock_guard<std::mutex> lock(mu_);
  return pins_.try_emplace(shard, etag).first->second;
}

// The object version a source reads (what RemoteReader fetches and caches by). Immutable but for
// the ETag a catalog-described object learns on its first GET (kept in `pins`).
class RemoteShardSource::Object final : public RangeFetcher {
 public:
  Object(std::shared_ptr<const HttpClient> client, std::string url, std::string name,
         uint64_t size, std::string etag, std::string identity = {},
         std::shared_ptr<EtagPins> pins = nullptr, uint32_t shard = 0)
      : client_(std::move(client)), url_(std::move(url)), name_(std::move(name)), size_(size),
        etag_(std::move(etag)), pins_(std::move(pins)), shard_(shard),
        key_(url_ + "\n" + (identity.empty() ? etag_ : identity)),
        persistent_(!etag_.empty() || !identity.empty()) {}

  const std::string& cache_key() const override { return key_; }
  bool persistent() const override { return persistent_; }
  uint64_t size() const override { return size_; }
  Status Fetch(uint64_t offset, std::span<uint8_t> buf,
               const std::function<void(size_t)>& progress = nullptr) const override {
    std::optional<std::string> etag = etag_;
    if (pins_) etag = pins_->Get(shard_);
    if (!etag) return FirstFetch(offset, buf);
    auto got = client_->GetRange(url_, offset, buf, *etag, progress);
    if (!got.ok()) return got.status().WithPrefix(name_);
    return CheckLength(offset, buf, *got);
  }

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  const std::string& etag() const { return etag_; }

 private:
  // The shard's first GET (of this mount): its size checked against the catalog's and its ETag
  // pinned. Bytes are not handed out before the answer is checked (no progress).
  Status FirstFetch(uint64_t offset, std::span<uint8_t> buf) const {
    HttpRangeAnswer answer;
    auto got = client_->GetRange(url_, offset, buf, {}, nullptr, &answer);
    if (!got.ok()) return got.status().WithPrefix(name_);
    if (answer.total_known && answer.total != size_) {
      return Status::Stale(
          name_ + " at " + url_ + " is " + std::to_string(answer.total) + " bytes, the catalog " +
          "says " + std::to_string(size_) + ": the catalog is stale; run `mkpack catalog` in the " +
          "pack directory on the server and upload the new " + kCatalogFileName);
    }
    PACKFS_RETURN_IF_ERROR(CheckLength(offset, buf, *got));
    const std::string pinned = pins_->Pin(shard_, answer.etag);
    if (pinned != answer.etag) {
      return Status::Stale(name_ + ": " + url_ + " changed while it was first read (ETag " +
                           pinned + ", then " + answer.etag + ")");
    }
    return Status::OK();
  }
  Status CheckLength(uint64_t offset, std::span<uint8_t> buf, size_t got) const {
    if (got == buf.size()) return Status::OK();
    return Status::Corruption(name_ + ": " + url_ + " now ends before byte " +
                              std::to_string(offset + buf.size()) + " (size was " +
                              std::to_string(size_) + " when opened); the object changed");
  }

  std::shared_ptr<const HttpClient> client_;
  std::string url_;
  std::string name_;
  uint64_t size_;
  std::string etag_;
  std::shared_ptr<EtagPins> pins_;  // null: etag_ is what every GET requires
  uint32_t shard_;
  std::string key_;
  bool persistent_;
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

std::unique_ptr<RemoteShardSource> RemoteShardSource::FromCatalog(
    std::shared_ptr<const HttpClient> client, std::string url, std::string display_name,
    uint64_t size, uint64_t fingerprint, std::shared_ptr<EtagPins> pins, uint32_t shard,
    std::shared_ptr<RemoteReader> reader) {
  // The catalog's description of the bytes names them: the same shard under a new catalog (or a
  // later mount) finds its cached bytes, a rewritten one gets new keys.
  char identity[64];
  std::snprintf(identity, sizeof identity, "catalog %llu %016llx",
                static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(fingerprint));
  auto object = std::make_shared<const Object>(std::move(client), std::move(url),
                                               std::move(display_name), size, std::string(),
                                               identity, std::move(pins), shard);
  return std::unique_ptr<RemoteShardSource>(
      new RemoteShardSource(std::move(object), std::move(reader)));
}

const std::string& RemoteShardSource::name() const { return object_->name(); }
uint64_t RemoteShardSource::size() const { return object_->size(); }
const std::string& RemoteShardSource::url() const { return object_->url(); }
const std::string& RemoteShardSource::etag() const { return object_->etag(); }
std::shared_ptr<const RangeFetcher> RemoteShardSource::fetcher() const { return object_; }

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
                                               uint64_t offset, std::span<uint8_t> buf,
                                               uint64_t run_end) const {
  const uint64_t size = object_->size();
  if (offset >= size || buf.empty()) return size_t{0};
  if (reader_) return reader_->Read(object_, member_begin, member_end, offset, buf, run_end);
  const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - offset));
  PACKFS_RETURN_IF_ERROR(object_->Fetch(offset, buf.first(want)));
  return want;
}

Result<std::optional<size_t>> RemoteShardSource::LendMemberAt(uint64_t member_begin,
                                                              uint64_t member_end,
                                                              uint64_t offset, size_t length,
                                                              std::vector<Extent>* out,
                                                              uint64_t run_end) const {
  if (!reader_) return std::optional<size_t>();
  return reader_->Lend(object_, member_begin, member_end, offset, length, out, run_end);
}

bool RemoteShardSource::MayLendFollowers(uint64_t offset, uint64_t reader) const {
  if (!reader_) return false;
  bool shared = false;
  const bool alone = reader_->WalkAlone(object_->cache_key(), offset, reader, &shared);
  // Whatever a disk-cached object's reads fetch is written through to the disk cache, so there
  // followers come from the disk, at random as from a local shard file; but not beside a walk
  // several readers share (they would race the pushes, fuse/push.h).
  if (reader_->disk() && object_->persistent()) return !shared;
  return alone;
}

bool RemoteShardSource::ReadCachedRange(uint64_t offset, std::span<uint8_t> buf) const {
  return reader_ && reader_->ReadDiskCached(*object_, offset, buf);
}

std::shared_ptr<const UniqueFd> RemoteShardSource::HintFile(uint64_t offset,
                                                           uint64_t length) const {
  return reader_ ? reader_->HintCached(*object_, offset, length) : nullptr;
}

bool RemoteShardSource::LendCachedMember(uint64_t member_begin, uint64_t member_end,
                                         std::vector<Extent>* out) const {
  return reader_ && reader_->LendCachedMember(*object_, member_begin, member_end, out);
}

}  // namespace packfs
