// Byte counts as users type them on command lines ("536870912", "512M", "4GiB", "1.5G"), shared
// by packfs (--cache-size, --disk-cache-size) and mkpack (--max-pack-bytes).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/base/status.h"

namespace packfs {

// A number (decimals allowed) and an optional binary unit: B, K/k, M, G, T, or KiB, MiB, GiB,
// TiB. The result is at least 1 byte and fits in 64 bits; anything else is InvalidArgument with
// an example of what is accepted (callers prefix the flag's name).
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace packfs
