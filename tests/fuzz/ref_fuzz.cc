// Fuzz target: blob references, keys and shard names as users and other tools write them.
// A reference that parses must format back to itself; a valid key must quote without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/base/key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  auto ref = packfs::ParseRef(s);
  if (ref.ok()) {
    if (packfs::FormatRef(ref->key, ref->shard) != s) std::abort();
    if (!packfs::ValidateKey(ref->key).ok()) std::abort();
  }
  if (packfs::ValidateKey(s).ok()) {
    (void)packfs::QuoteKey(s);
    if (!packfs::IsValidUtf8(s)) std::abort();
  }
  (void)packfs::ParseShardFileName(s);
  return 0;
}
