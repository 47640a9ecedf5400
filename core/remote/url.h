// URLs of remote pack sets: parsing http(s):// and s3:// locations, joining a base with a shard
// name, and percent-encoding. Pure functions over values; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace packfs {

struct Url {
  std::string scheme;  // "http", "https" or "s3" (lowercased)
  std::string host;    // host name or IP literal (IPv6 without brackets); the bucket for s3
  int port = 0;        // 0: the scheme's default; never set for s3
  // http(s): the path, starting with "/" (as given, already percent-encoded if it needs to be),
  // without query or fragment. s3: the key prefix without a leading "/" (raw, not encoded).
  std::string path;

  bool is_s3() const { return scheme == "s3"; }
  // "scheme://host[:port]path" (IPv6 hosts bracketed). For s3: "s3://bucket/prefix".
  std::string ToString() const;
};

// True when `text` starts with http://, https:// or s3:// (case-insensitive).
bool IsRemoteLocation(std::string_view text);

// Parses "http[s]://host[:port][/path]" or "s3://bucket[/prefix]". Rejects user info
// ("user:pw@"), query strings and fragments (credentials never travel in a URL here), empty hosts,
// bad ports and bucket names S3 cannot have. InvalidArgument naming the text on failure.
Result<Url> ParseUrl(std::string_view text);

// `s` with ASCII letters lowercased (schemes, hosts, header names); other bytes unchanged.
std::string AsciiLower(std::string_view s);

// Percent-encodes every byte outside RFC 3986's unreserved set (A-Z a-z 0-9 - . _ ~); "/" is kept
// when keep_slash. This is also the encoding AWS SigV4 expects for paths and query values.
std::string PercentEncode(std::string_view raw, bool keep_slash);

// Decodes %XX escapes; InvalidArgument on a malformed escape.
Result<std::string> PercentDecode(std::string_view encoded);

// Joins a base URL and a relative shard name ("media/pack-0003.zip"): exactly one "/" between
// them, each name segment percent-encoded (so spaces, "#", "?" and non-ASCII bytes are safe).
// Refuses names with "." or ".." segments, empty segments or a leading "/" (InvalidArgument):
// a shard name must never escape the base.
Result<Url> JoinUrl(const Url& base, std::string_view name);

// The last segment of the URL's path (percent-decoded for http; the host when the path is empty):
// the name a local copy of a remote pack directory would have, and so the prefix of its shards in
// blob references.
std::string UrlBaseName(const Url& url);

}  // namespace packfs
