// S3 access: addressing (virtual-hosted AWS or path-style custom endpoints), credentials from the
// environment, SigV4 signing through libcurl, ListObjectsV2 with continuation, and shard sources
// for objects. Immutable after Create; thread-safe. Owns (shares) one HttpClient.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/remote/http_client.h"
#include "core/remote/remote_source.h"

namespace packfs {

struct S3Config {
  // Empty: AWS, virtual-hosted ("https://<bucket>.s3.<region>.amazonaws.com/<key>").
  // Otherwise an S3-compatible store's base URL ("http://127.0.0.1:9000"), addressed path-style
  // ("<endpoint>/<bucket>/<key>"), as MinIO, Ceph and moto expect.
  std::string endpoint;
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  // Unsigned requests (public buckets). Also in effect when access_key is empty.
  bool anonymous = false;

  // Reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL_S3 or
  // AWS_ENDPOINT_URL, AWS_REGION or AWS_DEFAULT_REGION. Anonymous when no key id is set.
  static S3Config FromEnvironment();
};

struct S3Object {
  std::string key;   // full key, prefix included
  uint64_t size = 0;
  std::string etag;  // quoted, as S3 sends it (matches a GET's ETag header)
};

class S3Client {
 public:
  // InvalidArgument for a bad endpoint, a key id without a secret, or an empty region.
  static Result<std::unique_ptr<S3Client>> Create(S3Config config, HttpOptions http = {});

  // The URL of bucket/key under this client's addressing; the key is percent-encoded.
  std::string ObjectUrl(const std::string& bucket, const std::string& key) const;

  // Every object whose key starts with `prefix`, in key order, following continuation tokens
  // (max_keys per page, 1..1000). Errors name the bucket/prefix and the HTTP status.
  Result<std::vector<S3Object>> List(const std::string& bucket, const std::string& prefix,
                                     int max_keys = 1000) const;

  // A source for one object, sized by a HEAD.
  Result<std::unique_ptr<RemoteShardSource>> OpenObject(const std::string& bucket,
                                                        const std::string& key,
                                                        std::string display_name) const;
  // A source for a listed object; no request.
  std::unique_ptr<RemoteShardSource> SourceFor(const std::string& bucket, const S3Object& object,
                                               std::string display_name) const;

  const std::shared_ptr<HttpClient>& http() const { return http_; }
  const S3Config& config() const { return config_; }

 private:
  S3Client(S3Config config, std::string endpoint_base, std::shared_ptr<HttpClient> http)
      : config_(std::move(config)), endpoint_base_(std::move(endpoint_base)),
        http_(std::move(http)) {}
  // URL of the bucket itself, without a trailing "/".
  std::string BucketUrl(const std::string& bucket) const;

  S3Config config_;
  std::string endpoint_base_;  // custom endpoint without trailing "/", or "" for AWS
  std::shared_ptr<HttpClient> http_;
};

// Parses one ListObjectsV2 response page (exposed for tests and fuzzing). Appends to `out`; sets
// `next_token` to the continuation token when the listing is truncated, else clears it.
Status ParseListObjectsV2(const std::string& xml, std::vector<S3Object>* out,
                          std::string* next_token);

}  // namespace packfs
