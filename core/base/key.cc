// Key validation, blob references and shard file names.
#include "core/base/key.h"

#include <cstdio>

namespace packfs {

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      uint8_t cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) {
      return false;  // overlong
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

static bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

Status ValidateKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("empty key");
  if (key.find('\0') != std::string_view::npos) return Status::InvalidArgument("key holds a NUL byte");
  if (!IsValidUtf8(key)) return Status::InvalidArgument("key is not valid UTF-8");
  if (key.front() == '/') return Status::InvalidArgument("key starts with '/' (absolute path)");
  if (key.find('\\') != std::string_view::npos) {
    return Status::InvalidArgument("key holds a backslash");
  }
  if (IsSpace(key.front()) || IsSpace(key.back())) {
    return Status::InvalidArgument("key starts or ends with whitespace");
  }
  if (key.find("::") != std::string_view::npos) {
    return Status::InvalidArgument("key holds '::' (the blob reference separator)");
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view comp = key.substr(start, end - start);
    if (comp.empty()) return Status::InvalidArgument("key has an empty path component ('//' or trailing '/')");
    if (comp == ".") return Status::InvalidArgument("key has a '.' component");
    if (comp == "..") return Status::InvalidArgument("key has a '..' component");
    if (comp.size() > 255) return Status::InvalidArgument("key has a path component longer than 255 bytes");
    start = end + 1;
  }
  return Status::OK();
}

std::string QuoteKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  bool utf8 = IsValidUtf8(key);
  for (char ch : key) {
    uint8_t c = static_cast<uint8_t>(ch);
    if (c < 0x20 || c == 0x7F || (!utf8 && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string FormatRef(std::string_view key, std::string_view shard_path) {
  std::string r = "zip://";
  r += key;
  r += "::";
  r += shard_path;
  return r;
}

Result<BlobRef> ParseRef(std::string_view ref) {
  constexpr std::string_view kScheme = "zip://";
  if (ref.substr(0, kScheme.size()) != kScheme) {
    return Status::InvalidArgument("blob reference must start with zip:// (got '" +
                                   QuoteKey(ref.substr(0, 32)) + "')");
  }
  std::string_view rest = ref.substr(kScheme.size());
  size_t sep = rest.find("::");
  if (sep == std::string_view::npos) {
    return Status::InvalidArgument("blob reference has no '::' between key and shard: " +
                                   QuoteKey(ref));
  }
  BlobRef br{std::string(rest.substr(0, sep)), std::string(rest.substr(sep + 2))};
  Status st = ValidateKey(br.key);
  if (!st.ok()) return st.WithPrefix("blob reference " + QuoteKey(ref));
  if (br.shard.empty()) return Status::InvalidArgument("blob reference names no shard: " + QuoteKey(ref));
  return br;
}

std::string ShardFileName(uint64_t index) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "pack-%04llu.zip", static_cast<unsigned long long>(index));
  return buf;
}

int64_t ParseShardFileName(std::string_view name) {
  constexpr std::string_view kPre = "pack-", kSuf = ".zip";
  if (name.size() < kPre.size() + 4 + kSuf.size()) return -1;
  if (name.substr(0, kPre.size()) != kPre) return -1;
  if (name.substr(name.size() - kSuf.size()) != kSuf) return -1;
  std::string_view digits = name.substr(kPre.size(), name.size() - kPre.size() - kSuf.size());
  if (digits.size() < 4 || digits.size() > 12) return -1;
  // Four digits exactly below 10000; past 9999 no leading zero (canonical form only).
  if (digits.size() > 4 && digits[0] == '0') return -1;
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  if (digits.size() > 4 && v < 10000) return -1;
  return v;
}

}  // namespace packfs
