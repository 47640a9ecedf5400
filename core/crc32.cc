// CRC-32 through libdeflate's PCLMUL-accelerated implementation.
#include "core/crc32.h"

#include <libdeflate.h>

namespace packfs {

uint32_t Crc32(uint32_t crc, const void* data, size_t len) {
  return libdeflate_crc32(crc, data, len);
}

}  // namespace packfs
