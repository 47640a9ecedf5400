// Fuzz target: a shard's bytes through everything that parses them — the end records and
// central directory (with and without read windows), each member's local header, and the CRC
// check of the members found. Nothing may crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/shard_source.h"
#include "core/format/zip_reader.h"
#include "core/read/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  packfs::MemoryShardSource src("fuzz.zip", std::vector<uint8_t>(data, data + size));
  for (size_t window : {size_t{0}, size_t{4096}}) {
    packfs::ZipIndexOptions opts;
    opts.read_window = window;
    auto index = packfs::ReadZipIndex(src, opts);
    if (!index.ok()) continue;
    for (const auto& m : index->members) {
      auto data_offset = packfs::ReadLocalHeader(src, m.local_header_offset, m.name);
      (void)data_offset;
    }
    std::vector<std::string> problems;
    uint64_t bytes = 0;
    (void)packfs::CheckMemberCrcs(src, index->members, &problems, &bytes);
  }
  (void)packfs::ZipFingerprint(src);
  return 0;
}
