// Keys (member paths) and blob references: validation, splitting, formatting. Pure functions.
//
// A key is a safe relative POSIX path: non-empty, valid UTF-8, no NUL, no backslash, no leading
// '/', no empty, "." or ".." component, no leading/trailing whitespace, never containing "::".
// A blob reference is "zip://<key>::<shard path relative to the dataset root>", split at the
// first "::".
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace packfs {

// OK when `key` is a safe key; otherwise InvalidArgument explaining which rule it breaks
// (the message does not repeat the key; callers add where it came from).
Status ValidateKey(std::string_view key);

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

// A key made printable for messages: control bytes and invalid UTF-8 escaped as \xNN.
std::string QuoteKey(std::string_view key);

struct BlobRef {
  std::string key;
  std::string shard;  // path relative to the dataset root, e.g. "media/pack-0000.zip"
};

std::string FormatRef(std::string_view key, std::string_view shard_path);
// Parses "zip://KEY::SHARD"; InvalidArgument when the scheme, separator or key is wrong.
Result<BlobRef> ParseRef(std::string_view ref);

// Shard file names: "pack-0000.zip" ... "pack-9999.zip", then five digits "pack-10000.zip".
std::string ShardFileName(uint64_t index);
// The index of a shard file name, or -1 when `name` is not one.
int64_t ParseShardFileName(std::string_view name);

}  // namespace packfs
