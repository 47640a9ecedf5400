// ListingAhead: the next part of a directory listing, kept for the request that asks for it.
#include "fuse/listing_ahead.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace packfs {

std::vector<ListingAhead::Slot>::iterator ListingAhead::Find(uint64_t ino, uint64_t offset) {
  return std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) {
    return s.ino == ino && s.offset == offset;
  });
}

bool ListingAhead::Reserve(uint64_t ino, uint64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Find(ino, offset) != slots_.end()) return false;
  auto slot = slots_.end();
  if (slots_.size() >= kSlots) {
    // The oldest part read and not taken (a listing given up, or read from elsewhere).
    for (auto it = slots_.begin(); it != slots_.end(); ++it) {
      if (it->ready && (slot == slots_.end() || it->age < slot->age)) slot = it;
    }
    if (slot == slots_.end()) return false;
  } else {
    slot = slots_.insert(slots_.end(), Slot{});
  }
  *slot = Slot{ino, offset, next_age_++, false, {}};
  return true;
}

void ListingAhead::Fill(uint64_t ino, uint64_t offset, std::vector<DirEntry> entries) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = Find(ino, offset);
    if (it == slots_.end()) return;
    if (entries.empty()) {
      slots_.erase(it);
    } else {
      it->entries = std::move(entries);
      it->ready = true;
      kept_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  filled_.notify_all();
}

std::optional<std::vector<DirEntry>> ListingAhead::Take(uint64_t ino, uint64_t offset) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = Find(ino, offset);
  if (it == slots_.end()) return std::nullopt;
  if (!it->ready) {
    // Being read: wait for it (or for it to be dropped), rather than read it a second time.
    filled_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] {
      it = Find(ino, offset);
      return it == slots_.end() || it->ready;
    });
    it = Find(ino, offset);
    if (it == slots_.end() || !it->ready) return std::nullopt;
  }
  std::vector<DirEntry> entries = std::move(it->entries);
  slots_.erase(it);
  used_.fetch_add(1, std::memory_order_relaxed);
  return entries;
}

std::string ListingAhead::Json() const {
  return "\"listing_ahead\": {\"kept\": " + std::to_string(kept_.load()) +
         ", \"used\": " + std::to_string(used_.load()) + "}";
}

}  // namespace packfs
