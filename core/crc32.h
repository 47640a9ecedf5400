// CRC-32 (zip/IEEE polynomial), incremental. Backed by libdeflate (see bench/crc32_bench.cc for
// the measurement against zlib that chose it). Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace packfs {

// Continues a CRC-32 over `len` bytes; start with crc = 0.
uint32_t Crc32(uint32_t crc, const void* data, size_t len);

}  // namespace packfs
