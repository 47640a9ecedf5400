// DirNames: directories' children held in memory for lookups (see dir_names.h).
#include "core/read/dir_names.h"

#include <algorithm>

namespace packfs {

DirNames::Found DirNames::Find(uint64_t parent, std::string_view name, Node* child) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = dirs_.find(parent);
  if (it == dirs_.end()) return Found::kNotHeld;
  answered_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<Node>& kids = it->second;
  auto pos = std::lower_bound(kids.begin(), kids.end(), name,
                              [](const Node& n, std::string_view v) { return n.name < v; });
  if (pos == kids.end() || pos->name != name) return Found::kAbsent;
  *child = *pos;
  return Found::kChild;
}

bool DirNames::Count(uint64_t parent, uint32_t* count) {
  std::lock_guard<std::mutex> lock(count_mu_);
  // Bounded: a mount looking names up in many directories once each starts its counts over.
  if (counts_.size() >= 4 * kMaxChildren) counts_.clear();
  uint32_t& n = counts_[parent];
  if (n < (1u << 31)) ++n;
  *count = n;
  return n >= kLoadAfter && (n & (n - 1)) == 0;  // 16, 32, 64, ...
}

bool DirNames::Due(uint32_t count, uint64_t children) const {
  if (count < kLoadAfter || count < children / 8) return false;
  std::shared_lock<std::shared_mutex> lock(mu_);
  return children <= kMaxChildren && nodes_ + children <= kMaxNodes;
}

bool DirNames::Hold(uint64_t parent, std::vector<Node> children) {
  if (!std::is_sorted(children.begin(), children.end(),
                      [](const Node& a, const Node& b) { return a.name < b.name; })) {
    return false;
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (children.size() > kMaxChildren || nodes_ + children.size() > kMaxNodes ||
      dirs_.count(parent)) {
    return false;
  }
  nodes_ += children.size();
  dirs_.emplace(parent, std::move(children));
  return true;
}

DirNames::Counters DirNames::counters() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return Counters{dirs_.size(), nodes_, answered_.load(std::memory_order_relaxed)};
}

}  // namespace packfs
