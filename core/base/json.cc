// JSON string escaping.
#include "core/base/json.h"

#include <cstdio>

#include "core/base/key.h"

namespace packfs {

std::string JsonString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  bool utf8 = IsValidUtf8(s);
  for (char ch : s) {
    uint8_t c = static_cast<uint8_t>(ch);
    switch (ch) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && !utf8) {
      out += "\xEF\xBF\xBD";
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

}  // namespace packfs
