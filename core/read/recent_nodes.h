// RecentNodes: the file nodes a mount looked up last, so that the READ that follows a LOOKUP
// finds its node without asking the catalog again. Thread-safe; bounded.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>

#include "core/catalog/catalog.h"

namespace packfs {

// A direct-mapped table of kSlots nodes indexed by inode number: a node stays until another
// with the same slot replaces it. Catalog nodes never change while mounted, so an entry is
// either the node asked for or not taken.
class RecentNodes {
 public:
  static constexpr size_t kSlots = 4096;  // about 400 KiB; 8 readers need a handful
  void Put(const Node& node);
  std::optional<Node> Get(uint64_t ino) const;

 private:
  static constexpr size_t kStripes = 64;
  struct Slot {
    uint64_t ino = 0;  // 0: empty
    Node node;
  };
  std::array<Slot, kSlots> slots_;
  mutable std::array<std::mutex, kStripes> mu_;
};

}  // namespace packfs
