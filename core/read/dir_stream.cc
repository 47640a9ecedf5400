// DirStream: one thread reading directories' shard extents ahead of their reads (dir_stream.h).
#include "core/read/dir_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "core/base/thread_name.h"

namespace packfs {

DirStream::DirStream(ExtentsOf extents_of, Room room, Stats& stats)
    : extents_of_(std::move(extents_of)), room_(std::move(room)), stats_(stats) {
  thread_ = std::thread([this] {
    NameThread("packfs-stream");
    Run();
  });
}

DirStream::~DirStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DirStream::Want(uint64_t dir) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || asked_.size() >= kMaxDirs || !asked_.insert(dir).second) return;
    queue_.push_back(dir);
  }
  cv_.notify_one();
}

bool DirStream::Streamed(uint64_t dir) const {
  std::lock_guard<std::mutex> lock(mu_);
  return streamed_.count(dir) != 0;
}

void DirStream::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return stop_ || (queue_.empty() && !busy_); });
}

void DirStream::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    const uint64_t dir = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::vector<Extent> extents = extents_of_(dir);
    bool whole = !extents.empty();
    for (const Extent& e : extents) {
      const Outcome o = StreamExtent(e);
      if (o != Outcome::kDone) whole = false;
      if (o == Outcome::kStopped) break;
    }
    extents.clear();  // the leases go outside the lock
    lock.lock();
    if (whole) streamed_.insert(dir);
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  idle_cv_.notify_all();
}

DirStream::Outcome DirStream::StreamExtent(const Extent& e) {
  const int fd = e.copy ? e.copy->get() : e.lease ? e.lease->fd() : -1;
  if (fd < 0 || e.to <= e.from) return Outcome::kSkipped;
  std::optional<uint64_t> room = room_();
  if (!room || *room < 2 * (e.to - e.from) + kReserve) {
    stats_.CountStream(Stats::StreamEvent::kNoRoom);
    return Outcome::kSkipped;
  }
  stats_.CountStream(Stats::StreamEvent::kExtent);
  uint64_t waiting = 0;  // end of the chunk hinted before this one (0: none)
  for (uint64_t off = e.from; off < e.to; off += kChunk) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return Outcome::kStopped;
    }
    // Memory fills as the readers and this stream go: stop before what is left would be evicted
    // before its turn.
    if (off > e.from && (off - e.from) % (kCheckEvery * kChunk) == 0) {
      room = room_();
      if (!room || *room < (e.to - off) + kReserve) {
        stats_.CountStream(Stats::StreamEvent::kStopped);
        return Outcome::kSkipped;
      }
    }
    const uint64_t len = std::min(kChunk, e.to - off);
    (void)::posix_fadvise(fd, static_cast<off_t>(off), static_cast<off_t>(len),
                          POSIX_FADV_WILLNEED);
    stats_.AddStreamed(len);
    // Waits for the chunk before: a read of its last byte returns once its pages are in.
    if (waiting) {
      char byte;
      (void)::pread(fd, &byte, 1, static_cast<off_t>(waiting - 1));
    }
    waiting = off + len;
  }
  return Outcome::kDone;
}

}  // namespace packfs
