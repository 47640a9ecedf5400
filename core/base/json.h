// Minimal JSON text helpers for machine-readable output (mkpack --json, packfs stats). Pure.
#pragma once

#include <string>
#include <string_view>

namespace packfs {

// `s` as a quoted JSON string. Invalid UTF-8 bytes become U+FFFD so the output stays valid JSON.
std::string JsonString(std::string_view s);

}  // namespace packfs
