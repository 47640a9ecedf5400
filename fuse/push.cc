// Pusher: pushing the files that follow a read into the kernel's page cache (see push.h).
#include "fuse/push.h"

#include <algorithm>
#include <optional>
#include <cerrno>
#include <cstring>

#include "core/base/thread_name.h"

namespace packfs {

InodeBits::InodeBits(uint64_t max_ino)
    : max_ino_(max_ino), words_(new std::atomic<uint64_t>[max_ino / 64 + 1]) {
  for (uint64_t i = 0; i <= max_ino / 64; ++i) words_[i].store(0, std::memory_order_relaxed);
}

void InodeBits::Set(uint64_t ino) {
  if (ino > max_ino_) return;
  const uint64_t bit = uint64_t{1} << (ino % 64);
  if (!(words_[ino / 64].load(std::memory_order_relaxed) & bit)) {
    words_[ino / 64].fetch_or(bit, std::memory_order_relaxed);
  }
}

void InodeBits::Clear(uint64_t ino) {
  if (ino > max_ino_) return;
  const uint64_t bit = uint64_t{1} << (ino % 64);
  if (words_[ino / 64].load(std::memory_order_relaxed) & bit) {
    words_[ino / 64].fetch_and(~bit, std::memory_order_relaxed);
  }
}

bool InodeBits::Test(uint64_t ino) const {
  if (ino > max_ino_) return false;
  return (words_[ino / 64].load(std::memory_order_relaxed) >> (ino % 64)) & 1;
}

bool InodeBits::TestAndClear(uint64_t ino) {
  if (!Test(ino)) return false;
  const uint64_t bit = uint64_t{1} << (ino % 64);
  return (words_[ino / 64].fetch_and(~bit, std::memory_order_relaxed) & bit) != 0;
}

bool InodeBits::TestAndSet(uint64_t ino) {
  if (ino > max_ino_) return false;
  const uint64_t bit = uint64_t{1} << (ino % 64);
  return (words_[ino / 64].fetch_or(bit, std::memory_order_relaxed) & bit) != 0;
}

Pusher::Pusher(fuse_session* se, uint64_t max_ino, uint64_t window, size_t queue_bytes,
               Stats& stats, std::function<void(std::vector<uint8_t>)> release,
               std::function<uint64_t(uint64_t)> children,
               std::function<void(uint64_t)> on_ready, int threads)
    : se_(se),
      window_(window),
      queue_max_(queue_bytes),
      stats_(stats),
      release_(std::move(release)),
      children_(std::move(children)),
      on_ready_(std::move(on_ready)),
      known_(max_ino),
      cached_(max_ino),
      pushed_(max_ino),
      coming_(max_ino),
      fresh_(max_ino),
      fresh_ring_(kFreshLookups, 0) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this] {
      NameThread("packfs-push");
      Run();
    });
  }
}

Pusher::~Pusher() {
  Stop();
  if (list_thread_.joinable()) list_thread_.join();
}

void Pusher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  walk_cv_.notify_all();
  list_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  if (walk_thread_.joinable()) walk_thread_.join();
  // Not the list thread: see push.h.
  std::lock_guard<std::mutex> lock(mu_);
  for (Job& job : queue_) Release(job);
  queue_.clear();
  queued_bytes_ = 0;
}

void Pusher::LookedUp(uint64_t ino) {
  known_.Set(ino);
  std::lock_guard<std::mutex> lock(fresh_mu_);
  const uint64_t old = fresh_ring_[fresh_next_];
  if (old != 0) fresh_.Clear(old);
  fresh_ring_[fresh_next_] = ino;
  fresh_next_ = (fresh_next_ + 1) % fresh_ring_.size();
  fresh_.Set(ino);
}

void Pusher::Forgotten(uint64_t ino) {
  known_.Clear(ino);
  cached_.Clear(ino);
  // Its pages went with the inode before it was read.
  if (pushed_.TestAndClear(ino)) Wasted();
}

void Pusher::Served(uint64_t ino, uint64_t dir) {
  if (pushed_.TestAndClear(ino)) Wasted();
  if (cached_.Test(ino)) return;
  cached_.Set(ino);
  Count(dir, 1);
}

bool Pusher::DirReady(uint64_t dir) { return Ready(Count(dir, 0)); }

bool Pusher::MayPushInto(uint64_t dir) {
  const DirCount c = Count(dir, 0);
  return Ready(c) && !c.no_room;
}

void Pusher::NoRoom(uint64_t dir) {
  std::lock_guard<std::mutex> lock(dirs_mu_);
  auto it = dirs_.find(dir);
  if (it != dirs_.end()) it->second.no_room = true;
}

bool Pusher::Ready(const DirCount& c) {
  return c.served * 100 >= c.children * kPushAfterPercent;
}

void Pusher::Wasted() {
  stats_.CountPush(Stats::PushEvent::kReread);
  if (payoff_.Wasted()) stats_.CountPush(Stats::PushEvent::kPaused);
}

Pusher::DirCount Pusher::Count(uint64_t dir, uint64_t add) {
  std::optional<DirCount> out;
  {
    std::lock_guard<std::mutex> lock(dirs_mu_);
    auto it = dirs_.find(dir);
    if (it != dirs_.end()) {
      it->second.served += add;
      out = it->second;
    }
  }
  if (!out) {
    // A directory seen for the first time: learn its size (a catalog query, outside the lock).
    DirCount count;
    count.children = children_ ? children_(dir) : 0;
    std::lock_guard<std::mutex> lock(dirs_mu_);
    if (dirs_.size() >= kMaxDirs) dirs_.clear();
    DirCount& c = dirs_.emplace(dir, count).first->second;
    c.served += add;
    out = c;
  }
  // Each count is taken under the lock right after its own add, so exactly one caller sees the
  // directory cross the rule.
  if (add && Ready(*out) && !Ready(DirCount{out->children, out->served - add})) {
    if (on_ready_) on_ready_(dir);
    bool queued = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued = QueueReadyLocked(dir, out->children);
    }
    if (queued) {
      list_cv_.notify_one();
      walk_cv_.notify_one();
    }
  }
  return *out;
}

void Pusher::Release(Job& job) {
  if (release_) release_(std::move(job.buf));
}

void Pusher::Enqueue(Job job) {
  if (job.followers.empty()) {
    Release(job);
    return;
  }
  const size_t bytes = job.buf.capacity();
  const uint64_t dir = job.dir;
  bool queued = false;
  bool taken = false;  // every follower taken by a walk (or another read) meanwhile
  uint64_t files = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_ && queued_bytes_ + bytes <= queue_max_) {
      Claim(job);
      files = job.followers.size();
      taken = files == 0;
      if (!taken) {
        queued_bytes_ += bytes;
        busy_.store(queued_bytes_ > queue_max_ / 2, std::memory_order_relaxed);
        queue_.push_back(std::move(job));
        queued = true;
      }
    }
  }
  if (taken) {
    Release(job);
    return;
  }
  if (!queued) {
    for (const Filesystem::Follower& f : job.followers) coming_.Clear(f.ino);
    stats_.CountPush(Stats::PushEvent::kDropped);
    Release(job);
    return;
  }
  cv_.notify_one();
  Count(dir, files);
}

void Pusher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    PushOne(job);
    const size_t bytes = job.buf.capacity();
    Release(job);
    lock.lock();
    queued_bytes_ -= bytes;
    busy_.store(queued_bytes_ > queue_max_ / 2, std::memory_order_relaxed);
  }
}

void Pusher::StartWalks(Children children, ReadRun read_run, Room room) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (walk_read_ || stop_) return;
    walk_children_ = std::move(children);
    walk_read_ = std::move(read_run);
    walk_room_ = std::move(room);
  }
  walk_thread_ = std::thread([this] {
    NameThread("packfs-walk");
    RunWalks();
  });
}

void Pusher::StartLists(List list, Room room) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (list_ || stop_) return;
    list_ = std::move(list);
    list_room_ = std::move(room);
  }
  list_thread_ = std::thread([this] {
    NameThread("packfs-list");
    RunLists();
  });
}

bool Pusher::QueueReadyLocked(uint64_t dir, uint64_t entries) {
  if (stop_) return false;
  if (list_) {
    lists_.emplace_back(dir, entries);
  } else if (walk_read_) {
    walks_.push_back(dir);
  } else {
    return false;
  }
  return true;
}

bool Pusher::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void Pusher::RunWalks() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    walk_cv_.wait(lock, [this] { return stop_ || !walks_.empty(); });
    if (stop_) return;
    const uint64_t dir = walks_.front();
    walks_.pop_front();
    lock.unlock();
    Walk(dir);
    lock.lock();
  }
}

void Pusher::RunLists() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    list_cv_.wait(lock, [this] { return stop_ || !lists_.empty(); });
    if (stop_) return;
    const auto [dir, entries] = lists_.front();
    lists_.pop_front();
    lock.unlock();
    const std::optional<uint64_t> room = list_room_ ? list_room_() : std::nullopt;
    if (!room || *room < entries * kListBytesPerEntry + kWalkReserve) {
      stats_.CountPush(Stats::PushEvent::kListNoRoom);
    } else if (list_(dir)) {
      stats_.CountPush(Stats::PushEvent::kList);
    } else {
      stats_.CountPush(Stats::PushEvent::kListFailed);
    }
    lock.lock();
    if (walk_read_ && !stop_) {
      walks_.push_back(dir);
      walk_cv_.notify_one();
    }
  }
}

void Pusher::Walk(uint64_t dir) {
  const Filesystem::ChildSpan span = walk_children_(dir);
  // Not on network file systems (see ReadThrough): their shards' bytes are streamed into the
  // page cache instead (Filesystem::StreamDir).
  if (!span.local_members && !span.remote_members) return;
  auto room_for = [this](uint64_t bytes) {
    const std::optional<uint64_t> room = walk_room_();
    return room && *room >= bytes + kWalkReserve;
  };
  // A local shard's bytes are cached twice (in the shard and in the files); a remote shard's
  // stay in the page cache once, pushed (its memory cache is bounded apart), or twice with a
  // disk cache: counted twice either way.
  if (!room_for(2 * span.bytes)) {
    NoRoom(dir);  // nor by the reads' windows (see push.h); marked before it is counted
    stats_.CountPush(Stats::PushEvent::kWalkNoRoom);
    return;
  }
  stats_.CountPush(Stats::PushEvent::kWalk);
  uint64_t done = 0;  // bytes pushed so far
  int windows = 0;
  for (uint64_t ino = span.first; ino < span.first + span.count;) {
    if (!Wanted(ino)) {
      ++ino;
      continue;
    }
    // Memory filling up (what is left would be evicted before its read), or pushed files found
    // evicted before their read: stop, as the reads' pushes pause.
    if (Stopping() || !Pays() ||
        (++windows % kWalkCheckEvery == 0 && !room_for(span.bytes - std::min(done, span.bytes)))) {
      return;
    }
    Job job;
    uint64_t next = ino + 1;
    if (walk_read_(ino, &job) && !job.followers.empty()) {
      next = std::max(next, job.followers.back().ino + 1);
      Claim(job);
      for (const auto& f : job.followers) done += f.data.size();
      PushOne(job);
    }
    Release(job);
    ino = next;
  }
}

FollowerClaims::Take Pusher::TakeFollower(uint64_t ino) {
  if (coming_.Test(ino)) {
    stats_.CountPush(Stats::PushEvent::kCutShort);
    return Take::kStop;
  }
  if (!Wanted(ino)) return Take::kSkip;
  if (coming_.TestAndSet(ino)) {  // another read took it just now
    stats_.CountPush(Stats::PushEvent::kCutShort);
    return Take::kStop;
  }
  return Take::kTaken;
}

void Pusher::Claim(Job& job) {
  std::erase_if(job.followers, [this](const Filesystem::Follower& f) {
    if (!cached_.TestAndSet(f.ino)) return false;
    coming_.Clear(f.ino);  // read through a request since it was taken
    return true;
  });
}

void Pusher::PushOne(const Job& job) {
  stats_.CountPush(Stats::PushEvent::kWindow);
  for (const Filesystem::Follower& f : job.followers) {
    fuse_bufvec bv = FUSE_BUFVEC_INIT(f.data.size());
    bv.buf[0].mem = const_cast<uint8_t*>(f.data.data());
    const int rc = fuse_lowlevel_notify_store(se_, f.ino, 0, &bv, FUSE_BUF_NO_SPLICE);
    coming_.Clear(f.ino);
    if (rc == 0) {
      pushed_.Set(f.ino);
      stats_.CountPush(Stats::PushEvent::kFile, f.data.size());
      if (payoff_.Ahead()) stats_.CountPush(Stats::PushEvent::kPaused);
    } else if (rc == -ENOENT) {
      // The kernel no longer holds the inode (evicted since it was listed).
      known_.Clear(f.ino);
      cached_.Clear(f.ino);
      stats_.CountPush(Stats::PushEvent::kUnknownInode);
    } else {
      cached_.Clear(f.ino);
      stats_.CountPush(Stats::PushEvent::kFailed);
    }
  }
}

}  // namespace packfs
