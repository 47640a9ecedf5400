// Python-compatible JSON text: float repr re-formatted from std::to_chars' shortest digits, and a
// serializer over nlohmann::ordered_json with json.dumps' separators and escaping.
#include "core/lerobot/python_json.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace packfs {

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value < 0 ? "-Infinity" : "Infinity";
  // Shortest round-trip digits, closest to the value among equally short ones (the same choice
  // as Python's dtoa mode 0), as d.ddde+XX; re-laid out below by repr's rules.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";  // cannot happen: 64 bytes hold any double
  std::string_view sci(buf, static_cast<size_t>(end - buf));
  std::string out;
  if (!sci.empty() && sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  // to_chars writes the exponent as printf's %e does (a sign, at least two digits), which is
  // also how repr writes it.
  const std::string_view exp_text = sci.substr(e);
  std::string_view exp_digits = exp_text.substr(1);
  if (exp_digits.front() == '+') exp_digits.remove_prefix(1);
  int exponent = 0;
  std::from_chars(exp_digits.data(), exp_digits.data() + exp_digits.size(), exponent);
  const int decpt = exponent + 1;  // digits before the decimal point in positional notation
  const int ndigits = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (ndigits > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += exp_text;
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (decpt < ndigits) {
    out.append(digits, 0, static_cast<size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<size_t>(decpt));
  } else {
    out += digits;
    out.append(static_cast<size_t>(decpt - ndigits), '0');
    out += ".0";
  }
  return out;
}

namespace {

// "\uXXXX" (lower-case hex, as Python writes it).
void AppendJsonUnicodeEscape(uint32_t cp, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) *out += kHex[(cp >> shift) & 0xF];
}

// One ASCII character as json.dumps writes it: the short escapes, \u00XX below 0x20, and DEL
// escaped too with ensure_ascii (Python escapes everything outside ' '..'~' then).
void AppendJsonAsciiChar(unsigned char c, bool ensure_ascii, std::string* out) {
  switch (c) {
    case '"': *out += "\\\""; break;
    case '\\': *out += "\\\\"; break;
    case '\n': *out += "\\n"; break;
    case '\r': *out += "\\r"; break;
    case '\t': *out += "\\t"; break;
    case '\b': *out += "\\b"; break;
    case '\f': *out += "\\f"; break;
    default:
      if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
        AppendJsonUnicodeEscape(c, out);
      } else {
        out->push_back(static_cast<char>(c));
      }
  }
}

}  // namespace

void AppendPythonJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      AppendJsonAsciiChar(u, /*ensure_ascii=*/false, out);
    } else {
      out->push_back(c);  // UTF-8 as is (ensure_ascii=False)
    }
  }
  out->push_back('"');
}

void AppendPythonJsonAsciiString(std::string_view s, std::string* out) {
  auto u = [out](uint32_t cp) { AppendJsonUnicodeEscape(cp, out); };
  *out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      AppendJsonAsciiChar(c, /*ensure_ascii=*/true, out);
      ++i;
      continue;
    }
    const int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0F : 0x1F);
    for (int k = 1; k < len && i + k < s.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u(0xD800 + (cp >> 10));
      u(0xDC00 + (cp & 0x3FF));
    } else {
      u(cp);
    }
  }
  *out += '"';
}

namespace {

// Line break plus indentation before an element at nesting `level` (nothing on one line).
void PyJsonBreak(int indent, int level, std::string* out) {
  if (indent < 0) return;
  out->push_back('\n');
  out->append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
}

void AppendPyJsonAt(const nlohmann::ordered_json& v, int indent, int level, std::string* out) {
  using Type = nlohmann::ordered_json::value_t;
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.type()) {
    case Type::null: *out += "null"; return;
    case Type::boolean: *out += v.get<bool>() ? "true" : "false"; return;
    case Type::number_integer: *out += std::to_string(v.get<int64_t>()); return;
    case Type::number_unsigned: *out += std::to_string(v.get<uint64_t>()); return;
    case Type::number_float: *out += PythonFloatRepr(v.get<double>()); return;
    case Type::string: AppendPythonJsonString(v.get_ref<const std::string&>(), out); return;
    case Type::array: {
      if (v.empty()) {
        *out += "[]";
        return;
      }
      out->push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) *out += item_sep;
        first = false;
        PyJsonBreak(indent, level + 1, out);
        AppendPyJsonAt(e, indent, level + 1, out);
      }
      PyJsonBreak(indent, level, out);
      out->push_back(']');
      return;
    }
    case Type::object: {
      if (v.empty()) {
        *out += "{}";
        return;
      }
      out->push_back('{');
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) *out += item_sep;
        first = false;
        PyJsonBreak(indent, level + 1, out);
        AppendPythonJsonString(it.key(), out);
        *out += ": ";
        AppendPyJsonAt(it.value(), indent, level + 1, out);
      }
      PyJsonBreak(indent, level, out);
      out->push_back('}');
      return;
    }
    case Type::binary:
    case Type::discarded:
      *out += "null";
      return;
  }
}

}  // namespace

void AppendPythonJson(const nlohmann::ordered_json& value, int indent, std::string* out) {
  AppendPyJsonAt(value, indent, 0, out);
}

}  // namespace packfs
