// DirNames: the children of the directories a mount looks names up in most, held in memory in name
// order, so that a lookup there is a binary search instead of two catalog queries (the fence and
// the scan after it). In a by-path epoch those queries were a fifth of the daemon's CPU (perf,
// 8 readers, 2026-12-04).
//
// A directory is loaded once the lookups in it that the catalog answered reach an eighth of its
// children (and at least kLoadAfter): like pushing (fuse/push.h), only where a pass reads much of
// the directory. A pass over a tenth of a set would pay the load for few lookups; an epoch by path
// gets the other seven eighths of its lookups from memory. Only directories of at most
// kMaxChildren children, and only while kMaxNodes fit in all (about 128 bytes a node: up to
// ~8 MiB); the rest stay with the catalog. Nothing is evicted, so a mount that moves on to other
// directories answers those from the catalog as before, never worse. Catalog
// nodes do not change while mounted, so a held directory is never stale.
//
// Thread-safety: safe for concurrent use (a shared mutex for the held directories, a mutex for
// the counts).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/catalog/catalog.h"

namespace packfs {

class DirNames {
 public:
  static constexpr uint32_t kLoadAfter = 16;       // catalog lookups in a directory first
  static constexpr uint64_t kMaxChildren = 16384;  // larger directories stay with the catalog
  static constexpr uint64_t kMaxNodes = 65536;     // held in all

  enum class Found { kNotHeld, kAbsent, kChild };
  // `name` among the children of `parent` if that directory is held (kChild fills *child;
  // kAbsent: held, and no such child); kNotHeld otherwise.
  Found Find(uint64_t parent, std::string_view name, Node* child) const;
  // Counts a lookup in `parent` that the catalog answered. True on the kLoadAfter-th and every
  // count twice that: the caller should then load the directory (Hold) if Due(count, children).
  bool Count(uint64_t parent, uint32_t* count);
  // Whether a directory of `children` children with `count` lookups counted is to be loaded now,
  // and fits.
  bool Due(uint32_t count, uint64_t children) const;
  // Holds `children`, the directory's children in name order (byte order, as the catalog keeps
  // them). Refused (false) when over the bounds or not in that order.
  bool Hold(uint64_t parent, std::vector<Node> children);
  struct Counters {
    uint64_t dirs = 0;      // directories held
    uint64_t nodes = 0;     // ... and their children
    uint64_t answered = 0;  // lookups answered from them
  };
  Counters counters() const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, std::vector<Node>> dirs_;
  uint64_t nodes_ = 0;
  mutable std::atomic<uint64_t> answered_{0};

  std::mutex count_mu_;
  std::unordered_map<uint64_t, uint32_t> counts_;
};

}  // namespace packfs
