// CRC-32 (zip/IEEE polynomial), incremental, and the CRC of a concatenation from the CRCs of its
// parts. Backed by libdeflate (see bench/crc32_bench.cc for the measurement against zlib that
// chose it). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace packfs {

// Continues a CRC-32 over `len` bytes; start with crc = 0.
uint32_t Crc32(uint32_t crc, const void* data, size_t len);

// The CRC-32 of A followed by B, given crc_a = CRC-32 of A, crc_b = CRC-32 of B and B's length:
// lets pieces of a member hashed separately (in any order) be joined without their bytes.
// Cost: at most 64 multiplications modulo the polynomial (well under a microsecond).
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

}  // namespace packfs
