// RemoteShardSource: a shard that is an HTTP(S) or S3 object, read with one ranged GET per ReadAt.
// Thread-safe (immutable after construction; the shared HttpClient bounds concurrency). Holds a
// shared_ptr to its client, so many sources share one connection pool.
#pragma once

#include <memory>
#include <string>

#include "core/http_client.h"
#include "core/shard_source.h"

namespace packfs {

class RemoteShardSource final : public ShardSource {
 public:
  // Learns size and ETag with one HEAD of `url` (a full http(s) URL; for S3 the one S3Client
  // makes). Fails with the HEAD's Status (NotFound naming the URL for 404). `display_name` is what
  // messages call the shard ("media/pack-0003.zip").
  static Result<std::unique_ptr<RemoteShardSource>> Open(std::shared_ptr<const HttpClient> client,
                                                         std::string url,
                                                         std::string display_name);
  // No request: size and ETag come from a listing (S3 ListObjectsV2) or a catalog.
  static std::unique_ptr<RemoteShardSource> FromKnown(std::shared_ptr<const HttpClient> client,
                                                      std::string url, std::string display_name,
                                                      uint64_t size, std::string etag);

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  // One ranged GET of min(buf.size(), size() - offset) bytes; no request at or past the end.
  // Errors: the client's (named URL and HTTP status), NotSupported when the server ignores Range,
  // Stale when the object's ETag changed, Corruption when it is shorter than size() now.
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;

  const std::string& url() const { return url_; }
  const std::string& etag() const { return etag_; }

 private:
  RemoteShardSource(std::shared_ptr<const HttpClient> client, std::string url, std::string name,
                    uint64_t size, std::string etag)
      : client_(std::move(client)), url_(std::move(url)), name_(std::move(name)), size_(size),
        etag_(std::move(etag)) {}

  std::shared_ptr<const HttpClient> client_;
  std::string url_;
  std::string name_;
  uint64_t size_;
  std::string etag_;
};

}  // namespace packfs
