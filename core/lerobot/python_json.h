// JSON text exactly as Python 3's json module writes it (json.dump/json.dumps with
// ensure_ascii=False), for files that other tools compare or hash byte for byte (LeRobot v2.1
// metadata). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace packfs {

// A float as Python's json module writes it: float.__repr__ (the shortest digits that read back
// as the same double; exponent form iff the decimal exponent is < -4 or >= 16, with a sign and at
// least two exponent digits; integral values end in ".0"), and NaN, Infinity, -Infinity for the
// special values (json's allow_nan spelling; Python's own repr would say nan and inf).
// Examples: 0.1, 100000.0, 1e-05, 0.0001, 1e+16, 1000000000000000.0, -0.0, 1.5e+300.
std::string PythonFloatRepr(double value);

// Appends `s` as a JSON string literal the way json.dumps(ensure_ascii=False) does: \" \\ \n \r
// \t \b \f, other bytes below 0x20 as \u00xx (lowercase hex), everything else (0x7f, UTF-8
// sequences) raw. Bytes are not checked for valid UTF-8.
void AppendPythonJsonString(std::string_view s, std::string* out);
// The same as json.dumps' default (ensure_ascii=True) does: bytes outside 0x20-0x7e escaped,
// UTF-8 sequences as \uXXXX (lowercase hex; surrogate pairs above U+FFFF). `s` must be valid
// UTF-8 (e.g. from a parsed JSON text).
void AppendPythonJsonAsciiString(std::string_view s, std::string* out);

// Appends `value` as Python would write the same object (dicts keep the key order of `value`).
// indent < 0: json.dumps(obj, ensure_ascii=False) on one line, separators ", " and ": " (also
// what the jsonlines package writes per line). indent >= 0: json.dump(obj, f, indent=N,
// ensure_ascii=False): one element per line, "," at line ends, ": " after keys, "{}" and "[]"
// for empty containers, no final newline. Integers print as integers, floats with
// PythonFloatRepr. Binary values (which json::parse never makes) print as null.
void AppendPythonJson(const nlohmann::ordered_json& value, int indent, std::string* out);

}  // namespace packfs
