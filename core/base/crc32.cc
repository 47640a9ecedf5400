// CRC-32 through libdeflate's PCLMUL-accelerated implementation; combining by multiplication in
// GF(2)[x] modulo the CRC polynomial.
#include "core/base/crc32.h"

#include <libdeflate.h>

#include <array>

namespace packfs {
namespace {

// Polynomials here are in the CRC's reflected bit order: bit 31 is the coefficient of x^0,
// bit 0 that of x^31 (0xEDB88320 is the zip polynomial without its x^32 term).
constexpr uint32_t kPoly = 0xEDB88320u;
constexpr uint32_t kOne = 0x80000000u;  // x^0

// a * b mod P.
constexpr uint32_t MulMod(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  // Walk a's terms from x^0 up, with b multiplied by x once per step.
  for (int k = 0; k < 32; ++k) {
    if (a & (kOne >> k)) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;  // b * x: the x^31 term wraps around through P
  }
  return product;
}

// kPow2[k] = x^(2^k) mod P, for k < 67 (8 * len_b needs up to 2^66).
constexpr std::array<uint32_t, 67> MakePowers() {
  std::array<uint32_t, 67> p{};
  p[0] = kOne >> 1;  // x^1
  for (size_t k = 1; k < p.size(); ++k) p[k] = MulMod(p[k - 1], p[k - 1]);
  return p;
}
constexpr std::array<uint32_t, 67> kPow2 = MakePowers();

}  // namespace

uint32_t Crc32(uint32_t crc, const void* data, size_t len) {
  return libdeflate_crc32(crc, data, len);
}

uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // Appending len_b bytes multiplies A's remainder by x^(8 len_b); the pre- and post-inversion
  // of the two CRCs cancel, so the result is crc_a * x^(8 len_b) + crc_b (mod P).
  uint32_t shift = kOne;
  for (int k = 3; len_b != 0; ++k, len_b >>= 1) {
    if (len_b & 1) shift = MulMod(shift, kPow2[static_cast<size_t>(k)]);
  }
  return MulMod(shift, crc_a) ^ crc_b;
}

}  // namespace packfs
