// libcurl-based HttpClient: handle pool, one transfer per attempt, retry loop with jittered
// exponential backoff under an overall deadline.
#include "core/remote/http_client.h"

#include "core/remote/sha256.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/base/wait_notice.h"
#include "core/remote/url.h"

namespace packfs {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBody = 4096;
constexpr const char* kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Text between <tag> and </tag> in an XML error body, or "".
std::string XmlField(const std::string& body, const std::string& tag) {
  size_t a = body.find("<" + tag + ">");
  if (a == std::string::npos) return "";
  a += tag.size() + 2;
  size_t b = body.find("</" + tag + ">", a);
  if (b == std::string::npos) return "";
  return body.substr(a, std::min<size_t>(b - a, 300));
}

// Outcome of one attempt: OK, a final error, or an error worth another try.
struct AttemptResult {
  Status status;
  bool retry = false;
};

AttemptResult Final(Status status) { return {std::move(status), false}; }

// The request headers of one attempt, freed once its transfer is over.
struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using HeaderList = std::unique_ptr<curl_slist, SlistFree>;

// Connection-level failures worth another try (a refused connection, a dropped body, ...).
bool RetryableCurlCode(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

}  // namespace

// Lends out curl easy handles; at most `limit` ever exist. A handle keeps its connection cache
// across requests (curl_easy_reset keeps live connections), which is what makes reuse work.
struct HttpClient::Pool {
  explicit Pool(size_t limit) : limit(limit) {}
  ~Pool() {
    for (CURL* h : idle) curl_easy_cleanup(h);
  }

  CURL* Acquire() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !idle.empty() || created < limit; });
    CURL* h = nullptr;
    if (!idle.empty()) {
      h = idle.back();
      idle.pop_back();
    } else {
      h = curl_easy_init();
      if (h == nullptr) return nullptr;
      ++created;
    }
    ++in_use;
    peak = std::max(peak, in_use);
    return h;
  }

  void Release(CURL* h) {
    {
      std::lock_guard<std::mutex> lock(mu);
      idle.push_back(h);
      --in_use;
    }
    cv.notify_one();
  }

  const size_t limit;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<CURL*> idle;
  size_t created = 0;
  size_t in_use = 0;
  size_t peak = 0;
  uint64_t requests = 0;
  uint64_t attempts = 0;
  uint64_t retries = 0;
};

// One logical request and, after Perform, the outcome of its last attempt.
struct HttpClient::Request {
  enum class Kind { kHead, kRange, kWhole, kPut };
  Kind kind = Kind::kWhole;
  std::string url;
  uint64_t offset = 0;
  std::span<uint8_t> buf;       // kRange destination
  // kRange: leading bytes of buf final from earlier attempts (each attempt asks for the rest),
  // and who hears of final bytes (see GetRange).
  size_t base = 0;
  const std::function<void(size_t)>* progress = nullptr;
  size_t max_bytes = 0;         // kWhole limit
  std::string_view expected_etag;
  std::string_view body;           // kPut payload
  std::string if_none_match;       // kWhole conditional validators
  std::string if_modified_since;
  uint64_t first_bytes = 0;        // kWhole: ask for the object's first bytes only (0: all)

  // Per attempt.
  CURL* handle = nullptr;
  long status = 0;
  std::string reason;
  std::string etag, last_modified, content_range, accept_ranges;
  uint64_t content_length = 0;
  bool has_content_length = false;
  size_t received = 0;
  std::string whole;       // kWhole body
  std::string error_body;  // non-2xx body (truncated)
  bool ignored_range = false;
  bool overflow = false;
  bool not_modified = false;  // a conditional kWhole answered 304
  bool final_bytes = false;   // kRange: this attempt's answer checked, its bytes are final
  uint64_t total = 0;         // kRange: the size in Content-Range, when total_known
  bool total_known = false;

  void ResetAttempt() {
    status = 0;
    reason.clear();
    etag.clear();
    last_modified.clear();
    content_range.clear();
    accept_ranges.clear();
    content_length = 0;
    has_content_length = false;
    received = 0;
    whole.clear();
    error_body.clear();
    ignored_range = false;
    overflow = false;
    not_modified = false;
    final_bytes = false;
    total = 0;
    total_known = false;
  }

  // Whether a 206 answer is for this attempt's range and object version, from its headers (all
  // in before the first body byte): only then are its bytes final as they arrive.
  bool AnswerMatches() const {
    uint64_t start = 0;
    std::string_view cr = content_range;
    size_t dash = cr.find('-');
    if (cr.rfind("bytes ", 0) != 0 || dash == std::string_view::npos ||
        !ParseU64(cr.substr(6, dash - 6), &start) || start != offset + base) {
      return false;
    }
    return expected_etag.empty() || etag.empty() || etag == expected_etag;
  }

  std::string What() const {
    std::string m = kind == Kind::kHead ? "HEAD " : kind == Kind::kPut ? "PUT " : "GET ";
    m += url;
    if (kind == Kind::kRange) {
      m += " (bytes " + std::to_string(offset) + "-" + std::to_string(offset + buf.size() - 1) +
           ")";
    }
    return m;
  }

  HeaderList Configure(CURL* h, const HttpOptions& o, std::chrono::milliseconds remaining,
                       char* errbuf);
  AttemptResult Classify(CURLcode rc, const char* errbuf,
                         std::chrono::milliseconds request_timeout);
  AttemptResult CheckRangeAnswer(const std::string& what);
  AttemptResult CheckFirstBytesAnswer(const std::string& what);

  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    auto* r = static_cast<Request*>(self);
    std::string_view line(data, size * n);
    if (line.rfind("HTTP/", 0) == 0) {
      // A new response (after a redirect or 100-continue): forget the previous one's headers.
      r->etag.clear();
      r->last_modified.clear();
      r->content_range.clear();
      r->accept_ranges.clear();
      r->has_content_length = false;
      size_t sp = line.find(' ');
      size_t sp2 = sp == std::string_view::npos ? sp : line.find(' ', sp + 1);
      r->reason = sp2 == std::string_view::npos ? "" : std::string(Trim(line.substr(sp2 + 1)));
      return size * n;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * n;
    std::string name = AsciiLower(Trim(line.substr(0, colon)));
    std::string value(Trim(line.substr(colon + 1)));
    if (name == "etag") {
      r->etag = value;
    } else if (name == "last-modified") {
      r->last_modified = value;
    } else if (name == "content-range") {
      r->content_range = value;
    } else if (name == "accept-ranges") {
      r->accept_ranges = AsciiLower(value);
    } else if (name == "content-length") {
      r->has_content_length = ParseU64(value, &r->content_length);
    }
    return size * n;
  }

  static size_t OnBody(char* data, size_t size, size_t n, void* self) {
    auto* r = static_cast<Request*>(self);
    size_t len = size * n;
    if (r->status == 0) curl_easy_getinfo(r->handle, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status < 200 || r->status >= 300) {
      size_t keep = std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, r->error_body.size()));
      r->error_body.append(data, keep);
      return len;
    }
    if (r->kind == Kind::kRange) {
      if (r->status != 206) {
        r->ignored_range = true;
        return CURL_WRITEFUNC_ERROR;  // stop the whole-object download right here
      }
      if (len > r->buf.size() - r->base - r->received) {
        r->overflow = true;
        return CURL_WRITEFUNC_ERROR;
      }
      if (r->received == 0) r->final_bytes = r->AnswerMatches();
      std::memcpy(r->buf.data() + r->base + r->received, data, len);
      if (r->final_bytes && r->progress != nullptr) (*r->progress)(r->base + r->received + len);
    } else if (r->kind == Kind::kWhole) {
      if (len > r->max_bytes - r->whole.size()) {
        r->overflow = true;
        return CURL_WRITEFUNC_ERROR;
      }
      r->whole.append(data, len);
    }
    r->received += len;
    return len;
  }
};

HttpClient::HttpClient(HttpOptions options)
    : options_(std::move(options)), pool_(std::make_unique<Pool>(options_.max_connections)) {}

HttpClient::~HttpClient() {
  pool_.reset();
  curl_global_cleanup();
}

Result<std::shared_ptr<HttpClient>> HttpClient::Create(HttpOptions options) {
  if (options.max_connections == 0) {
    return Status::InvalidArgument("HTTP max_connections must be at least 1");
  }
  if (options.max_attempts < 1) {
    return Status::InvalidArgument("HTTP max_attempts must be at least 1");
  }
  // Reference-counted and thread-safe since curl 7.84 (Debian 12 has 7.88); paired with the
  // cleanup in the destructor.
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    return Status::IOError("libcurl initialisation failed");
  }
  return std::shared_ptr<HttpClient>(new HttpClient(std::move(options)));
}

HttpClientStats HttpClient::stats() const {
  std::lock_guard<std::mutex> lock(pool_->mu);
  HttpClientStats s;
  s.requests = pool_->requests;
  s.attempts = pool_->attempts;
  s.retries = pool_->retries;
  s.handles_created = pool_->created;
  s.peak_in_use = pool_->peak;
  return s;
}

namespace http_policy {

bool RetryableHttpStatus(long status) { return status >= 500 || status == 429 || status == 408; }

Status HttpStatusError(const std::string& what, long status, const std::string& reason,
                       const std::string& body) {
  std::string msg = what + ": HTTP " + std::to_string(status);
  if (!reason.empty()) msg += " " + reason;
  std::string code = XmlField(body, "Code");
  std::string text = XmlField(body, "Message");
  if (!code.empty()) msg += " (" + code + (text.empty() ? "" : ": " + text) + ")";
  if (status == 404) return Status::NotFound(msg);
  if (status == 401 || status == 403) {
    return Status::IOError(msg + "; check the credentials (AWS_ACCESS_KEY_ID, "
                                 "AWS_SECRET_ACCESS_KEY) and the object's permissions",
                           EACCES);
  }
  return Status::IOError(msg);
}

std::chrono::milliseconds BackoffCap(const HttpOptions& options, int attempt) {
  const auto cap = options.backoff_base * (int64_t{1} << std::clamp(attempt - 1, 0, 20));
  return std::min<std::chrono::milliseconds>(cap, options.backoff_max);
}

std::chrono::milliseconds BackoffDelay(const HttpOptions& options, int attempt,
                                       std::chrono::milliseconds left, std::mt19937_64& rng) {
  // Full jitter: spreads the retries of many readers hitting one overloaded server.
  std::uniform_int_distribution<int64_t> dist(
      0, std::max<int64_t>(0, BackoffCap(options, attempt).count()));
  const auto delay = std::chrono::milliseconds(dist(rng));
  return std::max(std::chrono::milliseconds(0), std::min(delay, left));
}

}  // namespace http_policy

// Sets the options of one attempt on `h` (after curl_easy_reset: nothing of an earlier request
// stays): the URL, limits from the time `remaining`, the callbacks into this request, its range,
// method and headers, signing. libcurl copies the strings it is given; `errbuf` and the returned
// header list must outlive the transfer.
HeaderList HttpClient::Request::Configure(CURL* h, const HttpOptions& o,
                                          std::chrono::milliseconds remaining, char* errbuf) {
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(remaining.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(remaining, o.connect_timeout).count()));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "packfs/" PACKFS_VERSION);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, o.verify_tls ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, o.verify_tls ? 2L : 0L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Request::OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Request::OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
  if (kind == Kind::kHead) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (kind == Kind::kRange) {
    const std::string range =
        std::to_string(offset + base) + "-" + std::to_string(offset + buf.size() - 1);
    curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  } else if (kind == Kind::kWhole && first_bytes > 0) {
    const std::string range = "0-" + std::to_string(first_bytes - 1);
    curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  }
  // 512 KiB receive buffer, libcurl's largest (its default is 16 KiB): fewer recv calls and write
  // callbacks for large ranges. The sequential read of a 256 MiB member from a warm server behind
  // 20 ms: 128 KiB used 20% less daemon CPU than 16 KiB; 512 KiB read 534-590 MB/s against
  // 422-507 at 128 KiB (4 interleaved rounds, 2026-12-03).
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L << 10);
  struct curl_slist* headers = nullptr;
  const auto add = [&headers](const std::string& header) {
    headers = curl_slist_append(headers, header.c_str());
  };
  if (kind == Kind::kRange && !expected_etag.empty()) {
    // The server refuses another version (412) instead of sending its bytes.
    add("If-Match: " + std::string(expected_etag));
  }
  if (kind == Kind::kPut) {
    // The body is sent from memory on every attempt. (No "Expect:" override: libcurl would sign
    // the emptied header but not send it.)
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    add("Content-Type: application/octet-stream");
  }
  if (!if_none_match.empty()) add("If-None-Match: " + if_none_match);
  if (!if_modified_since.empty()) add("If-Modified-Since: " + if_modified_since);
  if (!o.aws_sigv4.empty()) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, o.aws_sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, o.aws_access_key.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, o.aws_secret_key.c_str());
    // S3 wants the payload hash as a header (libcurl signs the same hash of the body it sends,
    // so both must be the real one): of the PUT body, else of the empty body.
    add("x-amz-content-sha256: " +
        (kind == Kind::kPut ? Sha256Hex(body) : std::string(kEmptySha256)));
    if (!o.aws_session_token.empty()) add("x-amz-security-token: " + o.aws_session_token);
  }
  if (headers != nullptr) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  return HeaderList(headers);
}

// What the attempt that ended with `rc` (curl's error text in errbuf) came to: success (OK), a
// final error, or an error worth another try. Records what the answer said for the caller
// (not_modified, total).
AttemptResult HttpClient::Request::Classify(CURLcode rc, const char* errbuf,
                                            std::chrono::milliseconds request_timeout) {
  const std::string what = What();
  const std::string curl_error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  if (ignored_range) {
    return Final(Status::NotSupported(
        what + ": the server ignores Range requests (answered 200 with the whole object instead "
               "of 206); packfs needs a server that supports byte ranges"));
  }
  if (overflow) {
    if (kind == Kind::kWhole) {
      return Final(Status::InvalidArgument(what + ": body larger than the " +
                                           std::to_string(max_bytes) + "-byte limit"));
    }
    return Final(
        Status::Corruption(what + ": the server sent more bytes than the range asked for"));
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Final(Status::IOError(what + ": timed out after " +
                                     std::to_string(request_timeout.count()) + " ms (" +
                                     curl_error + ")",
                                 ETIMEDOUT));
  }
  if (rc != CURLE_OK) {
    return {Status::IOError(what + ": " + curl_error), RetryableCurlCode(rc)};
  }
  if (status == 304 && kind == Kind::kWhole &&
      (!if_none_match.empty() || !if_modified_since.empty())) {
    not_modified = true;
  } else if (status == 412 && kind == Kind::kRange && !expected_etag.empty()) {
    return Final(Status::Stale(what + ": the object changed since it was first read (HTTP 412: "
                               "it no longer has ETag " + std::string(expected_etag) + ")"));
  } else if (status < 200 || status >= 300) {
    if (kind == Kind::kRange && status == 416) return Final(Status::OK());  // past EOF
    return {http_policy::HttpStatusError(what, status, reason, error_body),
            http_policy::RetryableHttpStatus(status)};
  } else if (kind == Kind::kRange) {
    AttemptResult checked = CheckRangeAnswer(what);
    if (!checked.status.ok()) return checked;
  } else if (kind == Kind::kWhole && !not_modified && has_content_length &&
             received != content_length) {
    return {Status::IOError(what + ": short body (" + std::to_string(received) + " of " +
                            std::to_string(content_length) + " bytes)"),
            true};
  } else if (kind == Kind::kWhole && status == 206) {
    AttemptResult checked = CheckFirstBytesAnswer(what);
    if (!checked.status.ok()) return checked;
  }
  if (!expected_etag.empty() && !etag.empty() && etag != expected_etag) {
    return Final(Status::Stale(what + ": the object changed since it was opened (ETag was " +
                               std::string(expected_etag) + ", now " + etag + ")"));
  }
  return Final(Status::OK());
}

// A 206 for a range: Content-Range "bytes START-END/TOTAL" must be the range asked for (or the
// start of it), and the body as long as it says. Notes the object's size (TOTAL) when given.
AttemptResult HttpClient::Request::CheckRangeAnswer(const std::string& what) {
  std::string_view cr = content_range;
  uint64_t start = 0, end = 0;
  size_t dash = cr.find('-'), slash = cr.find('/');
  bool parsed = cr.rfind("bytes ", 0) == 0 && dash != std::string_view::npos &&
                slash != std::string_view::npos && dash < slash &&
                ParseU64(cr.substr(6, dash - 6), &start) &&
                ParseU64(cr.substr(dash + 1, slash - dash - 1), &end) && end >= start;
  if (!parsed || start != offset + base || end - start >= buf.size() - base) {
    return Final(Status::Corruption(what + ": bad Content-Range '" + content_range + "'"));
  }
  total_known = ParseU64(cr.substr(slash + 1), &total) && total > end;
  uint64_t expected = end - start + 1;
  if (received != expected) {
    return {Status::IOError(what + ": short body (" + std::to_string(received) + " of " +
                            std::to_string(expected) + " bytes)"),
            true};
  }
  return Final(Status::OK());
}

// A 206 for the object's first bytes (GetIfChanged's first_bytes): "bytes 0-END/TOTAL", END + 1
// of them received.
AttemptResult HttpClient::Request::CheckFirstBytesAnswer(const std::string& what) {
  std::string_view cr = content_range;
  uint64_t start = 1, end = 0;
  size_t dash = cr.find('-'), slash = cr.find('/');
  bool parsed = first_bytes > 0 && cr.rfind("bytes ", 0) == 0 &&
                dash != std::string_view::npos && slash != std::string_view::npos &&
                dash < slash && ParseU64(cr.substr(6, dash - 6), &start) &&
                ParseU64(cr.substr(dash + 1, slash - dash - 1), &end) && end >= start &&
                ParseU64(cr.substr(slash + 1), &total) && total > end;
  if (!parsed || start != 0 || end >= first_bytes || received != end + 1) {
    return Final(Status::Corruption(what + ": bad Content-Range '" + content_range +
                                    "' for its first " + std::to_string(first_bytes) +
                                    " bytes"));
  }
  total_known = true;
  return Final(Status::OK());
}

// Runs `req` on a pooled handle: attempts (Configure, transfer, Classify) until one succeeds or
// fails for good, the tries run out or the deadline passes, with a jittered backoff between.
Status HttpClient::Perform(Request& req) const {
  const auto deadline = Clock::now() + options_.request_timeout;
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    ++pool_->requests;
  }
  // A request waits for the network (and maybe for a handle): a FUSE worker steps aside first.
  if (WaitNotice* notice = CurrentWaitNotice()) notice->BeforeWait();
  CURL* h = pool_->Acquire();
  if (h == nullptr) return Status::IOError(req.What() + ": cannot create a libcurl handle");
  struct Lease {
    Pool* pool;
    CURL* h;
    ~Lease() { pool->Release(h); }
  } lease{pool_.get(), h};

  std::mt19937_64 rng;  // seeded on the first retry; most requests never need it
  Status last;
  for (int attempt = 1;; ++attempt) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (remaining.count() <= 0) {
      return Status::IOError(req.What() + ": timed out after " +
                             std::to_string(options_.request_timeout.count()) + " ms" +
                             (last.ok() ? "" : " (last error: " + last.message() + ")"),
                             ETIMEDOUT);
    }
    {
      std::lock_guard<std::mutex> lock(pool_->mu);
      ++pool_->attempts;
      if (attempt > 1) ++pool_->retries;
    }
    req.ResetAttempt();
    req.handle = h;
    char errbuf[CURL_ERROR_SIZE] = {0};
    CURLcode rc;
    {
      const HeaderList headers = req.Configure(h, options_, remaining, errbuf);
      rc = curl_easy_perform(h);
    }
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
    if (req.status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &req.status);
    AttemptResult result = req.Classify(rc, errbuf, options_.request_timeout);
    if (result.status.ok() || !result.retry) return result.status;
    last = std::move(result.status);
    // Bytes of a checked answer are final even when its body broke off: the next attempt asks
    // for the rest only (and so never rewrites bytes a progress callback handed out).
    if (req.kind == Request::Kind::kRange && req.final_bytes) req.base += req.received;
    if (attempt >= options_.max_attempts) {
      return last.WithPrefix("gave up after " + std::to_string(attempt) + " attempts");
    }
    if (attempt == 1) rng.seed(std::random_device()());
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::this_thread::sleep_for(http_policy::BackoffDelay(options_, attempt, left, rng));
  }
}

Result<HttpObjectInfo> HttpClient::Head(const std::string& url) const {
  Request req;
  req.kind = Request::Kind::kHead;
  req.url = url;
  PACKFS_RETURN_IF_ERROR(Perform(req));
  if (!req.has_content_length) {
    return Status::NotSupported("HEAD " + url + ": the server sent no Content-Length");
  }
  HttpObjectInfo info;
  info.size = req.content_length;
  info.etag = req.etag;
  info.last_modified = req.last_modified;
  info.accepts_ranges = req.accept_ranges == "bytes";
  return info;
}

Result<size_t> HttpClient::GetRange(const std::string& url, uint64_t offset, std::span<uint8_t> buf,
                                    std::string_view expected_etag,
                                    const std::function<void(size_t)>& progress,
                                    HttpRangeAnswer* answer) const {
  if (buf.empty()) return size_t{0};
  if (offset > UINT64_MAX - buf.size()) {
    return Status::InvalidArgument("GET " + url + ": range past 2^64");
  }
  Request req;
  req.kind = Request::Kind::kRange;
  req.url = url;
  req.offset = offset;
  req.buf = buf;
  req.expected_etag = expected_etag;
  if (progress) req.progress = &progress;
  PACKFS_RETURN_IF_ERROR(Perform(req));
  if (answer != nullptr) {
    answer->etag = req.etag;
    answer->total = req.total;
    answer->total_known = req.total_known;
  }
  return req.base + req.received;
}

Result<std::string> HttpClient::GetAll(const std::string& url, size_t max_bytes) const {
  Request req;
  req.kind = Request::Kind::kWhole;
  req.url = url;
  req.max_bytes = max_bytes;
  PACKFS_RETURN_IF_ERROR(Perform(req));
  return std::move(req.whole);
}

Result<HttpConditionalGet> HttpClient::GetIfChanged(const std::string& url, size_t max_bytes,
                                                    const std::string& etag,
                                                    const std::string& last_modified,
                                                    uint64_t first_bytes) const {
  Request req;
  req.kind = Request::Kind::kWhole;
  req.url = url;
  req.max_bytes = first_bytes > 0 ? std::max<size_t>(max_bytes, first_bytes) : max_bytes;
  req.if_none_match = etag;
  req.if_modified_since = last_modified;
  req.first_bytes = first_bytes;
  PACKFS_RETURN_IF_ERROR(Perform(req));
  HttpConditionalGet out;
  out.not_modified = req.not_modified;
  if (!req.not_modified) {
    out.body = std::move(req.whole);
    out.total = req.total_known ? req.total : out.body.size();
  }
  out.etag = req.etag.empty() && req.not_modified ? etag : req.etag;
  out.last_modified =
      req.last_modified.empty() && req.not_modified ? last_modified : req.last_modified;
  return out;
}

Result<std::string> HttpClient::Put(const std::string& url, std::string_view body) const {
  Request req;
  req.kind = Request::Kind::kPut;
  req.url = url;
  req.body = body;
  PACKFS_RETURN_IF_ERROR(Perform(req));
  return req.etag;
}

int64_t ParseHttpDate(const std::string& date) {
  if (date.empty()) return -1;
  const time_t t = curl_getdate(date.c_str(), nullptr);
  return t < 0 ? -1 : static_cast<int64_t>(t);
}

}  // namespace packfs
