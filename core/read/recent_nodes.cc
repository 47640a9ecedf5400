// RecentNodes: a direct-mapped table of the file nodes looked up last (see recent_nodes.h).
#include "core/read/recent_nodes.h"

namespace packfs {

void RecentNodes::Put(const Node& node) {
  const size_t i = node.id % kSlots;
  std::lock_guard<std::mutex> lock(mu_[i % kStripes]);
  slots_[i].ino = node.id;
  slots_[i].node = node;
}

std::optional<Node> RecentNodes::Get(uint64_t ino) const {
  const size_t i = ino % kSlots;
  std::lock_guard<std::mutex> lock(mu_[i % kStripes]);
  if (ino == 0 || slots_[i].ino != ino) return std::nullopt;
  return slots_[i].node;
}

}  // namespace packfs
