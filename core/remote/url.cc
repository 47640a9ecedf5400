// URL parsing, joining and percent-encoding for remote shard locations.
#include "core/remote/url.h"

#include <cctype>
#include <charconv>

namespace packfs {

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && AsciiLower(text.substr(0, prefix.size())) == prefix;
}

bool IsUnreserved(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// S3 bucket naming rules (3-63 chars of a-z 0-9 . -, starting and ending alphanumeric). Enforced
// because the bucket becomes part of a host name in virtual-hosted addressing.
bool ValidBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '.' || c == '-')) {
      return false;
    }
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return alnum(b.front()) && alnum(b.back());
}

Status Bad(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("bad URL '" + std::string(text) + "': " + why);
}

}  // namespace

std::string Url::ToString() const {
  std::string out = scheme + "://";
  if (host.find(':') != std::string::npos) {
    out += "[" + host + "]";
  } else {
    out += host;
  }
  if (port != 0) out += ":" + std::to_string(port);
  if (is_s3()) {
    if (!path.empty()) out += "/" + path;
  } else {
    out += path;
  }
  return out;
}

bool IsRemoteLocation(std::string_view text) {
  return StartsWithNoCase(text, "http://") || StartsWithNoCase(text, "https://") ||
         StartsWithNoCase(text, "s3://");
}

Result<Url> ParseUrl(std::string_view text) {
  size_t sep = text.find("://");
  if (sep == std::string_view::npos) return Bad(text, "expected scheme://host/path");
  Url url;
  url.scheme = AsciiLower(text.substr(0, sep));
  if (url.scheme != "http" && url.scheme != "https" && url.scheme != "s3") {
    return Bad(text, "scheme must be http, https or s3");
  }
  std::string_view rest = text.substr(sep + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Bad(text, "query strings and fragments are not supported");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Bad(text, "credentials in URLs are not accepted; use the environment (AWS_ACCESS_KEY_ID...)");
  }
  if (authority.empty()) return Bad(text, "empty host");

  if (url.is_s3()) {
    if (!ValidBucket(authority)) {
      return Bad(text, "'" + std::string(authority) + "' is not a valid S3 bucket name");
    }
    url.host = std::string(authority);
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    url.path = std::string(path);
    return url;
  }

  std::string_view host = authority;
  std::string_view port;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return Bad(text, "unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad(text, "junk after IPv6 literal");
      port = after.substr(1);
      if (port.empty()) return Bad(text, "empty port");
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) return Bad(text, "empty port");
    }
  }
  if (host.empty()) return Bad(text, "empty host");
  for (char c : host) {
    unsigned char u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '.' || c == '-' || c == '_' || c == ':')) {
      return Bad(text, "invalid character in host");
    }
  }
  if (!port.empty()) {
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) {
      return Bad(text, "port must be a number from 1 to 65535");
    }
    url.port = p;
  }
  url.host = AsciiLower(host);
  url.path = path.empty() ? "/" : std::string(path);
  for (char c : url.path) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Bad(text, "spaces and control characters must be percent-encoded");
    }
  }
  return url;
}

std::string PercentEncode(std::string_view raw, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    unsigned char u = static_cast<unsigned char>(c);
    if (IsUnreserved(u) || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

Result<std::string> PercentDecode(std::string_view encoded) {
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      out += encoded[i];
      continue;
    }
    if (i + 2 >= encoded.size()) {
      return Status::InvalidArgument("truncated percent escape in '" + std::string(encoded) + "'");
    }
    int hi = HexValue(encoded[i + 1]);
    int lo = HexValue(encoded[i + 2]);
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("bad percent escape in '" + std::string(encoded) + "'");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

Result<Url> JoinUrl(const Url& base, std::string_view name) {
  if (name.empty() || name.front() == '/') {
    return Status::InvalidArgument("shard name '" + std::string(name) +
                                   "' must be a non-empty relative path");
  }
  std::string encoded;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view seg = name.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return Status::InvalidArgument("shard name '" + std::string(name) +
                                     "' has an empty, '.' or '..' segment");
    }
    if (!encoded.empty()) encoded += '/';
    encoded += base.is_s3() ? std::string(seg) : PercentEncode(seg, false);
    start = end + 1;
  }
  Url out = base;
  std::string& p = out.path;
  if (base.is_s3()) {
    if (!p.empty() && p.back() != '/') p += '/';
  } else if (p.empty() || p.back() != '/') {
    p += '/';
  }
  p += encoded;
  return out;
}

std::string UrlBaseName(const Url& url) {
  std::string path = url.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (!url.is_s3()) {
    Result<std::string> decoded = PercentDecode(base);
    if (decoded.ok()) base = *decoded;
  }
  return base.empty() ? url.host : base;
}

}  // namespace packfs
