// RemoteStore: one remote pack-set location ("https://host/data" or "s3://bucket/prefix") and the
// client that reaches it; turns shard names relative to it into RemoteShardSources and fetches
// small whole objects (the catalog). Immutable after Create; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/remote/http_client.h"
#include "core/remote/remote_source.h"
#include "core/remote/s3.h"
#include "core/remote/url.h"

namespace packfs {

class RemoteStore {
 public:
  // `location` as ParseUrl accepts it; `s3` is used only for s3:// locations (its endpoint,
  // region and credentials; S3Config::FromEnvironment() is the usual source).
  static Result<std::unique_ptr<RemoteStore>> Create(std::string_view location, S3Config s3,
                                                     HttpOptions http);

  // The full http(s) URL of `name` ("media/pack-0000.zip") under the location.
  Result<std::string> UrlOf(std::string_view name) const;
  // A shard source for `name`, sized by one HEAD; messages call it `name`.
  Result<std::unique_ptr<RemoteShardSource>> Open(std::string_view name) const;
  // The whole of a small object (e.g. ".packfs-catalog.sqlite"), at most max_bytes.
  Result<std::string> Fetch(std::string_view name, size_t max_bytes) const;

  const Url& location() const { return location_; }
  const std::shared_ptr<HttpClient>& http() const { return http_; }
  // Set for s3:// locations (listing), null otherwise.
  const S3Client* s3() const { return s3_.get(); }

 private:
  RemoteStore(Url location, std::shared_ptr<HttpClient> http, std::unique_ptr<S3Client> s3)
      : location_(std::move(location)), http_(std::move(http)), s3_(std::move(s3)) {}

  Url location_;
  std::shared_ptr<HttpClient> http_;
  std::unique_ptr<S3Client> s3_;
};

// Checks with one ranged GET of the first bytes of `url` (a shard; `etag` as for GetRange) that
// its server honours Range. Every read of a remote shard is a ranged GET, so a server that
// ignores Range (200 and the whole object instead of 206, as `python3 -m http.server` answers)
// fails with NotSupported naming the URL and what to do, instead of failing every read later.
// Other failures are the request's own.
Status ProbeRangeSupport(const HttpClient& http, const std::string& url, std::string_view etag);

}  // namespace packfs
