// Fuzz target: a damaged catalog file. Opening it either fails with a clear Status or gives a
// catalog whose every answer (nodes, listings, keys, lookups) comes back without crashing; the
// walk is bounded so a cyclic or absurd tree cannot hang the target.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/catalog/catalog.h"

namespace {

std::string TempPath() {
  return "/tmp/packfs-catalog-fuzz-" + std::to_string(::getpid()) + ".sqlite";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = TempPath();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  {
    auto cat = packfs::Catalog::Open(path);
    if (cat.ok()) {
      const packfs::Catalog& c = **cat;
      std::vector<uint64_t> todo = {packfs::kRootId};
      int budget = 2000;
      while (!todo.empty() && budget-- > 0) {
        uint64_t id = todo.back();
        todo.pop_back();
        auto node = c.Get(id);
        if (!node.ok() || !*node) continue;
        (void)c.KeyOf(**node);
        std::vector<packfs::Node> children;
        if (!c.List(**node, 0, 64, &children).ok()) continue;
        for (const auto& child : children) {
          (void)c.Lookup(id, child.name);
          if (child.id > id) todo.push_back(child.id);
        }
      }
      (void)c.Find("a/b");
    }
  }
  ::unlink(path.c_str());
  return 0;
}
