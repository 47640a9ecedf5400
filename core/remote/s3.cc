// S3Client: addressing, signing set-up, ListObjectsV2 paging and its XML parsing.
#include "core/remote/s3.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>

#include "core/remote/url.h"

namespace packfs {
namespace {

constexpr size_t kMaxListPage = 16u << 20;  // a 1000-key page is ~300 KiB; anything huge is wrong

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Decodes the five XML entities and numeric character references (S3 escapes keys this way).
Result<std::string> XmlUnescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      return Status::Corruption("bad XML entity in S3 listing");
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") out += '&';
    else if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "quot") out += '"';
    else if (ent == "apos") out += '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      uint32_t cp = 0;
      bool hex = ent[1] == 'x' || ent[1] == 'X';
      std::string_view digits = ent.substr(hex ? 2 : 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
          cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return Status::Corruption("bad XML character reference in S3 listing");
      }
      // UTF-8 encode.
      if (cp < 0x80) {
        out += static_cast<char>(cp);
      } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      }
    } else {
      return Status::Corruption("unknown XML entity '&" + std::string(ent) + ";' in S3 listing");
    }
    i = semi;
  }
  return out;
}

// The text of the first <tag>...</tag> inside [from, to) of xml; nullopt-like empty optional
// signalled by found=false. Elements here never nest within themselves, so a find is enough.
bool Element(std::string_view xml, std::string_view tag, std::string_view* text) {
  std::string open = "<" + std::string(tag) + ">";
  std::string close = "</" + std::string(tag) + ">";
  size_t a = xml.find(open);
  if (a == std::string_view::npos) return false;
  a += open.size();
  size_t b = xml.find(close, a);
  if (b == std::string_view::npos) return false;
  *text = xml.substr(a, b - a);
  return true;
}

}  // namespace

S3Config S3Config::FromEnvironment() {
  S3Config c;
  c.access_key = Env("AWS_ACCESS_KEY_ID");
  c.secret_key = Env("AWS_SECRET_ACCESS_KEY");
  c.session_token = Env("AWS_SESSION_TOKEN");
  c.endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (c.endpoint.empty()) c.endpoint = Env("AWS_ENDPOINT_URL");
  std::string region = Env("AWS_REGION");
  if (region.empty()) region = Env("AWS_DEFAULT_REGION");
  if (!region.empty()) c.region = region;
  c.anonymous = c.access_key.empty();
  return c;
}

Result<std::unique_ptr<S3Client>> S3Client::Create(S3Config config, HttpOptions http) {
  if (config.region.empty()) return Status::InvalidArgument("S3 region is empty; set AWS_REGION");
  for (char c : config.region) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) {
      return Status::InvalidArgument("S3 region '" + config.region + "' is not a region name");
    }
  }
  std::string base;
  if (!config.endpoint.empty()) {
    PACKFS_ASSIGN_OR_RETURN(Url ep, ParseUrl(config.endpoint));
    if (ep.is_s3()) {
      return Status::InvalidArgument("S3 endpoint '" + config.endpoint + "' must be http(s)://");
    }
    std::string path = ep.path;
    while (!path.empty() && path.back() == '/') path.pop_back();
    ep.path.clear();
    base = ep.ToString() + path;
  }
  if (config.access_key.empty()) config.anonymous = true;
  if (!config.anonymous) {
    if (config.secret_key.empty()) {
      return Status::InvalidArgument("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    }
    http.aws_sigv4 = "aws:amz:" + config.region + ":s3";
    http.aws_access_key = config.access_key;
    http.aws_secret_key = config.secret_key;
    http.aws_session_token = config.session_token;
  } else {
    http.aws_sigv4.clear();
  }
  PACKFS_ASSIGN_OR_RETURN(std::shared_ptr<HttpClient> client, HttpClient::Create(std::move(http)));
  return std::unique_ptr<S3Client>(new S3Client(std::move(config), std::move(base), std::move(client)));
}

std::string S3Client::BucketUrl(const std::string& bucket) const {
  if (!endpoint_base_.empty()) return endpoint_base_ + "/" + PercentEncode(bucket, false);
  // Dotted bucket names break the *.s3 TLS wildcard, so AWS needs path-style for them.
  if (bucket.find('.') != std::string::npos) {
    return "https://s3." + config_.region + ".amazonaws.com/" + bucket;
  }
  return "https://" + bucket + ".s3." + config_.region + ".amazonaws.com";
}

std::string S3Client::ObjectUrl(const std::string& bucket, const std::string& key) const {
  return BucketUrl(bucket) + "/" + PercentEncode(key, true);
}

Status ParseListObjectsV2(const std::string& xml, std::vector<S3Object>* out,
                          std::string* next_token) {
  std::string_view doc(xml);
  if (doc.find("<ListBucketResult") == std::string_view::npos) {
    return Status::Corruption("S3 listing is not a ListBucketResult document");
  }
  // Contents blocks first; the paging fields are read from outside them.
  std::string_view rest = doc;
  std::string outside;
  for (;;) {
    size_t a = rest.find("<Contents>");
    if (a == std::string_view::npos) {
      outside.append(rest);
      break;
    }
    outside.append(rest.substr(0, a));
    size_t b = rest.find("</Contents>", a);
    if (b == std::string_view::npos) return Status::Corruption("S3 listing: unterminated <Contents>");
    std::string_view block = rest.substr(a + 10, b - a - 10);
    std::string_view key, size, etag;
    if (!Element(block, "Key", &key) || !Element(block, "Size", &size)) {
      return Status::Corruption("S3 listing: <Contents> without <Key> or <Size>");
    }
    S3Object obj;
    PACKFS_ASSIGN_OR_RETURN(obj.key, XmlUnescape(key));
    auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), obj.size);
    if (ec != std::errc() || end != size.data() + size.size() || size.empty()) {
      return Status::Corruption("S3 listing: bad <Size> for key '" + obj.key + "'");
    }
    if (Element(block, "ETag", &etag)) {
      PACKFS_ASSIGN_OR_RETURN(obj.etag, XmlUnescape(etag));
    }
    out->push_back(std::move(obj));
    rest = rest.substr(b + 11);
  }
  std::string_view truncated, token;
  next_token->clear();
  if (Element(outside, "IsTruncated", &truncated) && truncated == "true") {
    if (!Element(outside, "NextContinuationToken", &token) || token.empty()) {
      return Status::Corruption("S3 listing is truncated but has no NextContinuationToken");
    }
    PACKFS_ASSIGN_OR_RETURN(*next_token, XmlUnescape(token));
  }
  return Status::OK();
}

Result<std::vector<S3Object>> S3Client::List(const std::string& bucket, const std::string& prefix,
                                             int max_keys) const {
  if (max_keys < 1 || max_keys > 1000) {
    return Status::InvalidArgument("S3 max-keys must be 1..1000");
  }
  const std::string where = "s3://" + bucket + "/" + prefix;
  std::vector<S3Object> objects;
  std::string token;
  std::set<std::string> seen_tokens;  // a server repeating a token would loop forever
  for (;;) {
    // Query parameters in byte order with SigV4's encoding, so the canonical request that
    // libcurl signs is the one the server reconstructs.
    std::string url = BucketUrl(bucket) + "/?";
    if (!token.empty()) url += "continuation-token=" + PercentEncode(token, false) + "&";
    url += "list-type=2&max-keys=" + std::to_string(max_keys) +
           "&prefix=" + PercentEncode(prefix, false);
    auto page = http_->GetAll(url, kMaxListPage);
    if (!page.ok()) return page.status().WithPrefix("listing " + where);
    size_t before = objects.size();
    Status st = ParseListObjectsV2(*page, &objects, &token);
    if (!st.ok()) return st.WithPrefix("listing " + where);
    if (token.empty()) break;
    if (objects.size() == before || !seen_tokens.insert(token).second) {
      return Status::Corruption("listing " + where + ": the server's continuation made no progress");
    }
  }
  return objects;
}

Result<std::unique_ptr<RemoteShardSource>> S3Client::OpenObject(const std::string& bucket,
                                                                const std::string& key,
                                                                std::string display_name) const {
  return RemoteShardSource::Open(http_, ObjectUrl(bucket, key), std::move(display_name));
}

std::unique_ptr<RemoteShardSource> S3Client::SourceFor(const std::string& bucket,
                                                       const S3Object& object,
                                                       std::string display_name) const {
  return RemoteShardSource::FromKnown(http_, ObjectUrl(bucket, object.key), std::move(display_name),
                                      object.size, object.etag);
}

}  // namespace packfs
