// HttpClient: HEAD, ranged GET into a caller buffer and whole-object GET over libcurl, with a
// bounded pool of reusable easy handles (one live connection each), retries with exponential
// backoff and full jitter, and one overall deadline per request.
// Thread-safe: any number of threads may call one client; at most max_connections requests run at
// once (further callers wait for a free handle). Shared by the sources that use it (shared_ptr);
// it owns its curl handles and must outlive no one in particular.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace packfs {

struct HttpOptions {
  // Concurrent requests (= easy handles = live connections). Readers beyond this wait.
  size_t max_connections = 8;
  // Tries per request, the first included. Retried: 5xx, 429, 408, connection errors, bodies
  // shorter than announced. Not retried: other 4xx, a server that ignores Range, timeouts.
  int max_attempts = 5;
  // Backoff before try n (n >= 2): uniform in [0, min(backoff_max, backoff_base * 2^(n-2))].
  std::chrono::milliseconds backoff_base{100};
  std::chrono::milliseconds backoff_max{5000};
  // Whole request, all tries and backoff included; a request past it fails with ETIMEDOUT.
  std::chrono::milliseconds request_timeout{60000};
  std::chrono::milliseconds connect_timeout{10000};
  // Signing with libcurl's CURLOPT_AWS_SIGV4 ("aws:amz:<region>:s3"); empty: unsigned requests.
  std::string aws_sigv4;
  std::string aws_access_key;
  std::string aws_secret_key;
  std::string aws_session_token;  // sent as x-amz-security-token when set
  bool verify_tls = true;
};

// What a HEAD tells about an object.
struct HttpObjectInfo {
  uint64_t size = 0;
  std::string etag;           // as sent, quotes included; empty when the server sends none
  std::string last_modified;  // HTTP date, as sent
  bool accepts_ranges = false;  // "Accept-Ranges: bytes" was present
};

// What the answer to a ranged GET said about the object (see GetRange).
struct HttpRangeAnswer {
  std::string etag;          // as sent; empty when the server sends none
  uint64_t total = 0;        // the object's size from Content-Range "bytes a-b/TOTAL" ...
  bool total_known = false;  // ... when it was a number (not "*")
};

// What a conditional GET brought back.
struct HttpConditionalGet {
  bool not_modified = false;  // 304: the caller's copy is current; body is empty
  std::string body;           // the object, or its first bytes (see GetIfChanged's first_bytes)
  std::string etag;           // of the object served (the request's validator on 304 if none)
  std::string last_modified;
  uint64_t total = 0;         // the object's size (unless not_modified)
};

// Counters for tests and stats; a snapshot.
struct HttpClientStats {
  uint64_t requests = 0;         // calls to Head/GetRange/GetAll
  uint64_t attempts = 0;         // transfers started, retries included
  uint64_t retries = 0;          // attempts after the first
  uint64_t handles_created = 0;  // never exceeds max_connections
  uint64_t peak_in_use = 0;      // most handles lent out at once
};

// Seconds since the epoch of an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"); -1 if unparseable.
int64_t ParseHttpDate(const std::string& date);

class HttpClient {
 public:
  // Fails (InvalidArgument) on nonsensical options (max_connections or max_attempts of 0).
  static Result<std::shared_ptr<HttpClient>> Create(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HEAD `url`. NotFound (404), IOError with EACCES (401/403) or EIO otherwise; the message names
  // the URL, the HTTP status and, for S3-style XML errors, their Code and Message.
  Result<HttpObjectInfo> Head(const std::string& url) const;

  // GET bytes [offset, offset + buf.size()) of `url` into buf with one Range request; returns how
  // many bytes arrived (fewer only at the end of the object; 0 when offset is at or past it).
  // A 200 answer (the server ignored Range) is refused with NotSupported: a whole-object download
  // per read would be ruinous. When expected_etag is non-empty it is sent as If-Match, and a 412
  // answer, or an answer carrying another ETag (a server that ignores If-Match), fails with
  // Stale (the object changed). `answer`, when given, hears the ETag and the object's size the
  // answer carried (on success; nothing when the range starts at or past the end).
  //
  // `progress`, when given, is called on the calling thread as the body arrives with how many
  // leading bytes of buf are final: the answer was a 206 for this range with the expected ETag.
  // The counts only grow, and no later attempt writes those bytes again (a retry asks for the
  // rest only), so a caller may hand them out while the transfer goes on.
  Result<size_t> GetRange(const std::string& url, uint64_t offset, std::span<uint8_t> buf,
                          std::string_view expected_etag = {},
                          const std::function<void(size_t)>& progress = nullptr,
                          HttpRangeAnswer* answer = nullptr) const;

  // GET the whole of `url` (listings, catalogs); fails with InvalidArgument when the body exceeds
  // max_bytes.
  Result<std::string> GetAll(const std::string& url, size_t max_bytes) const;

  // GET `url` unless it still matches what the caller holds: If-None-Match `etag` and/or
  // If-Modified-Since `last_modified` (either may be empty; both empty is a plain GET). A 304
  // comes back as not_modified with no body; errors as GetAll's. With first_bytes > 0 only the
  // object's first bytes are asked for (Range: bytes=0-(first_bytes - 1)): the body holds
  // min(first_bytes, total) of them (all of it from a server that ignores Range and answers
  // 200, within max_bytes), and `total` says how large the object is.
  Result<HttpConditionalGet> GetIfChanged(const std::string& url, size_t max_bytes,
                                          const std::string& etag,
                                          const std::string& last_modified,
                                          uint64_t first_bytes = 0) const;

  // PUT `body` as the object at `url` (Content-Type application/octet-stream); returns the new
  // object's ETag (may be empty). Signed requests carry the body's SHA-256, so S3 refuses a body
  // damaged on the way.
  // Retried like other requests (a PUT of the same bytes is idempotent).
  Result<std::string> Put(const std::string& url, std::string_view body) const;

  const HttpOptions& options() const { return options_; }
  HttpClientStats stats() const;

 private:
  struct Pool;
  struct Request;
  explicit HttpClient(HttpOptions options);
  Status Perform(Request& req) const;

  HttpOptions options_;
  std::unique_ptr<Pool> pool_;
};

// HttpClient's answer classification and retry delays, pure functions (exposed for tests).
namespace http_policy {

// Whether a request answered with HTTP `status` (an error) is worth another try: 5xx, 429 (Too
// Many Requests), 408 (Request Timeout).
bool RetryableHttpStatus(long status);

// The error for a non-2xx answer to `what` ("GET <url>"): the status and reason, and S3's XML
// <Code>/<Message> from `body` when present. NotFound for 404; IOError with EACCES and advice on
// credentials for 401 and 403; IOError (EIO) otherwise.
Status HttpStatusError(const std::string& what, long status, const std::string& reason,
                       const std::string& body);

// The longest wait after failed try `attempt` (>= 1): backoff_base * 2^(attempt - 1), at most
// backoff_max.
std::chrono::milliseconds BackoffCap(const HttpOptions& options, int attempt);

// The wait after failed try `attempt`: uniform in [0, BackoffCap] (full jitter, drawn from
// `rng`), cut to `left` (what remains before the request's deadline), never negative.
std::chrono::milliseconds BackoffDelay(const HttpOptions& options, int attempt,
                                       std::chrono::milliseconds left, std::mt19937_64& rng);

}  // namespace http_policy

}  // namespace packfs
