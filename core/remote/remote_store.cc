// RemoteStore: location parsing and name-to-URL mapping for http(s) and s3 pack sets.
#include "core/remote/remote_store.h"

namespace packfs {

Result<std::unique_ptr<RemoteStore>> RemoteStore::Create(std::string_view location, S3Config s3,
                                                         HttpOptions http) {
  PACKFS_ASSIGN_OR_RETURN(Url url, ParseUrl(location));
  if (url.is_s3()) {
    PACKFS_ASSIGN_OR_RETURN(std::unique_ptr<S3Client> client,
                            S3Client::Create(std::move(s3), std::move(http)));
    std::shared_ptr<HttpClient> shared = client->http();
    return std::unique_ptr<RemoteStore>(
        new RemoteStore(std::move(url), std::move(shared), std::move(client)));
  }
  PACKFS_ASSIGN_OR_RETURN(std::shared_ptr<HttpClient> client, HttpClient::Create(std::move(http)));
  return std::unique_ptr<RemoteStore>(new RemoteStore(std::move(url), std::move(client), nullptr));
}

Result<std::string> RemoteStore::UrlOf(std::string_view name) const {
  PACKFS_ASSIGN_OR_RETURN(Url joined, JoinUrl(location_, name));
  if (s3_) return s3_->ObjectUrl(joined.host, joined.path);
  return joined.ToString();
}

Result<std::unique_ptr<RemoteShardSource>> RemoteStore::Open(std::string_view name) const {
  PACKFS_ASSIGN_OR_RETURN(std::string url, UrlOf(name));
  return RemoteShardSource::Open(http_, std::move(url), std::string(name));
}

Result<std::string> RemoteStore::Fetch(std::string_view name, size_t max_bytes) const {
  PACKFS_ASSIGN_OR_RETURN(std::string url, UrlOf(name));
  auto body = http_->GetAll(url, max_bytes);
  if (!body.ok()) return body.status().WithPrefix(std::string(name));
  return body;
}

Status ProbeRangeSupport(const HttpClient& http, const std::string& url, std::string_view etag) {
  uint8_t head[4];
  Result<size_t> got = http.GetRange(url, 0, head, etag);
  if (got.ok()) return Status::OK();
  if (got.status().code() != Code::kNotSupported) return got.status();
  return Status::NotSupported(
      "the server of " + url + " ignores HTTP Range requests (asked for bytes 0-3, it answered "
      "200 with the whole object instead of 206 Partial Content); packfs and mkpack read shards "
      "in byte ranges, so serve the pack set with a server that supports them (nginx, Apache, "
      "Caddy and S3-compatible stores do; `python3 -m http.server` does not)");
}

}  // namespace packfs
