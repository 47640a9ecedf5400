// Fuzz target: a tar shard's bytes through the tar reader — header chains (ustar, GNU long
// names, base-256 sizes, pax records), the index with and without read windows, the per-member
// check of every member found, and the fingerprint. Nothing may crash, hang or read out of bounds;
// every member the index accepts must pass its own check.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/base/shard_source.h"
#include "core/format/tar_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  packfs::MemoryShardSource src("fuzz.tar", std::vector<uint8_t>(data, data + size));
  for (size_t window : {size_t{0}, size_t{4096}}) {
    packfs::TarIndexOptions opts;
    opts.read_window = window;
    auto index = packfs::ReadTarIndex(src, opts);
    if (!index.ok()) continue;
    for (const auto& m : index->members) {
      if (m.data_offset > size || m.size > size - m.data_offset) std::abort();  // out of the file
      if (!packfs::CheckTarMember(src, m.header_offset, m.name, m.data_offset, m.size).ok()) {
        std::abort();  // the index and the check disagree about a member
      }
    }
  }
  (void)packfs::TarFingerprint(src);
  return 0;
}
