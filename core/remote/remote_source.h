// RemoteShardSource: a shard that is an HTTP(S) or S3 object. Without a RemoteReader each ReadAt
// is one ranged GET; with one, reads go through its caches, whole-member fetches and read-ahead.
// Thread-safe (immutable after construction; the shared HttpClient bounds concurrency). Holds
// shared_ptrs to its client and reader, so many sources share one connection pool and cache.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/base/shard_source.h"
#include "core/remote/http_client.h"
#include "core/remote/remote_reader.h"

namespace packfs {

// The ETags a remote pack set's shards had when first read, by shard id: each shard's first GET
// learns its ETag, and every later GET by any source of that shard requires it (If-Match), so a
// mount reads one version of each shard without a request per shard up front. Thread-safe.
class EtagPins {
 public:
  std::optional<std::string> Get(uint32_t shard) const;
  // Pins `etag` for `shard` unless another is pinned already; returns the pinned one.
  std::string Pin(uint32_t shard, const std::string& etag);

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint32_t, std::string> pins_;
};

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

  // No request: the shard as a catalog describes it (its size, and the `fingerprint` of its
  // central directory, which with the URL names its bytes in the caches). Its first GET checks the
  // object's size (Content-Range) against `size`, failing with Stale when they differ (a stale
  // catalog), and pins the ETag it carried in `pins` under `shard`; later GETs require it.
  static std::unique_ptr<RemoteShardSource> FromCatalog(
      std::shared_ptr<const HttpClient> client, std::string url, std::string display_name,
      uint64_t size, uint64_t fingerprint, std::shared_ptr<EtagPins> pins, uint32_t shard,
      std::shared_ptr<RemoteReader> reader = nullptr);

  const std::string& name() const override;
  uint64_t size() const override;
  // One ranged GET of min(buf.size(), size() - offset) bytes; no request at or past the end.
  // Errors: the client's (named URL and HTTP status), NotSupported when the server ignores Range,
  // Stale when the object's ETag changed, Corruption when it is shorter than size() now.
  // With a reader: blocks through its caches (the request may cover more than asked).
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> buf) const override;
  // With a reader: a small member fetched whole, a large one with read-ahead when sequential.
  Result<size_t> ReadMemberAt(uint64_t member_begin, uint64_t member_end, uint64_t offset,
                              std::span<uint8_t> buf, uint64_t run_end = 0) const override;
  // With a reader: ReadMemberAt's bytes as slices of its cached blocks (no copy); else nullopt.
  Result<std::optional<size_t>> LendMemberAt(uint64_t member_begin, uint64_t member_end,
                                             uint64_t offset, size_t length,
                                             std::vector<Extent>* out,
                                             uint64_t run_end = 0) const override;

  // With a reader that keeps this object in a disk cache: followers come from there when it
  // holds them (ReadCachedRange), as from a local shard file, unless several readers share a
  // walk there (RemoteReader::WalkAlone). Without one: whether the reader's walk of this object
  // lends, and the member's bytes when its memory cache holds them all (LendCachedMember). No
  // reader: false.
  bool MayLendFollowers(uint64_t offset, uint64_t reader) const override;
  bool LendCachedMember(uint64_t member_begin, uint64_t member_end,
                        std::vector<Extent>* out) const override;
  bool ReadCachedRange(uint64_t offset, std::span<uint8_t> buf) const override;
  // The disk cache's file when it holds the range (RemoteReader::HintCached).
  std::shared_ptr<const UniqueFd> HintFile(uint64_t offset, uint64_t length) const override;

  // With a reader whose disk cache holds the range (verified): that cache file, at the same
  // offsets, so the reply splices from local disk like a local shard's. nullopt otherwise.
  Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>> MapToFile(
      uint64_t offset, uint64_t length) const override;

  const std::string& url() const;
  // The ETag known at construction (empty for FromCatalog: see EtagPins).
  const std::string& etag() const;
  // The object version this source reads, as RemoteReader fetches it (e.g. for RemoteDb).
  std::shared_ptr<const RangeFetcher> fetcher() const;

 private:
  class Object;
  RemoteShardSource(std::shared_ptr<const Object> object, std::shared_ptr<RemoteReader> reader);

  std::shared_ptr<const Object> object_;
  std::shared_ptr<RemoteReader> reader_;
};

}  // namespace packfs
