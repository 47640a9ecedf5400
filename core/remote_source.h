// RemoteShardSource: a shard that is an HTTP(S) or S3 object. Without a RemoteReader each ReadAt
// is one ranged GET; with one, reads go through its caches, whole-member fetches and read-ahead.
// Thread-safe (immutable after construction; the shared HttpClient bounds concurrency). Holds
// shared_ptrs to its client and reader, so many sources share one connection pool and cache.
#pragma once

#include <memory>
#include <string>

#include "core/http_client.h"
#include "core/remote_reader.h"
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
  // No request: size and ETag come from a listing (S3 ListObjectsV2) or a catalog. With a
  // `reader`, reads go through it.
  static std::unique_ptr<RemoteShardSource> FromKnown(
      std::shared_ptr<const HttpClient> client, std::string url, std::string display_name,
      uint64_t size, std::string etag, std::shared_ptr<RemoteReader> reader = nullptr);

  const std::string& name() const override;
  uint64_t size() const override;
  // One ranged GET of min(buf.size(), size() - offset) bytes; no request at or past the end.
  // Errors: the client's (named URL and HTTP status), NotSupported when the server ignores Range,
  // Stale when the object's ETag changed, Corruption when it is shorter than size() now.
  // With a reader: blocks through its caches (the request may cover more than asked).
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;
  // With a reader: a small member fetched whole, a large one with read-ahead when sequential.
  Result<size_t> ReadMemberAt(uint64_t member_begin, uint64_t member_end, uint64_t offset,
                              std::span<uint8_t> buf) const override;

  // With a reader whose disk cache holds the range (verified): that cache file, at the same
  // offsets, so the reply splices from local disk like a local shard's. nullopt otherwise.
  Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>> MapToFile(
      uint64_t offset, uint64_t length) const override;

  const std::string& url() const;
  const std::string& etag() const;

 private:
  class Object;
  RemoteShardSource(std::shared_ptr<const Object> object, std::shared_ptr<RemoteReader> reader);

  std::shared_ptr<const Object> object_;
  std::shared_ptr<RemoteReader> reader_;
};

}  // namespace packfs
