// Fuzz target: an S3 ListObjectsV2 response page (server-controlled XML). Parsing either fails with
// a clear Status or yields objects whose keys and tokens are plain strings; a continuation token
// is only ever reported together with IsTruncated=true.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/remote/s3.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string xml(reinterpret_cast<const char*>(data), size);
  std::vector<packfs::S3Object> objects;
  std::string token = "stale";  // must be overwritten or cleared by every call
  packfs::Status st = packfs::ParseListObjectsV2(xml, &objects, &token);
  if (st.ok()) {
    if (token == "stale") std::abort();
    // Nothing parsed can be longer than the page it came from.
    for (const auto& o : objects) {
      if (o.key.size() > size || o.etag.size() > size) std::abort();
    }
    if (token.size() > size) std::abort();
  } else if (st.message().empty()) {
    std::abort();
  }
  return 0;
}
