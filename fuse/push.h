// Pusher: turns a shard's locality into reads that send no request. After a READ that reaches the
// end of a small file, the whole files that follow it in its shard, whose inodes the kernel holds
// (looked up or listed, not yet forgotten) and that it has not been given yet, are read with the
// same pread and pushed into the kernel's page cache (FUSE_NOTIFY_STORE); the reader's later
// open and read of those files are then served by the kernel alone.
//
// Why only known inodes: the kernel drops a push for an inode it does not hold (ENOENT), and by
// path it holds none of the neighbours until their LOOKUP, which comes just before their READ.
// After a directory scan (readdirplus) it holds them all, and pushing pays: one pread and one
// request serve the neighbours. Bits, not counts: a push for an inode the kernel dropped
// meanwhile fails cheaply, and a lost bit only costs one push.
//
// Why a thread of its own: a push locks the file's pages in the kernel, and waits when a reader's
// read-ahead holds them while its READ is queued. Pushed from the FUSE workers, pushes could wait
// on READs that only those same workers can answer (measured: a 16-thread stress run slowed 30×).
// So the workers hand the bytes over and return to their requests; the push thread may wait,
// they never do. The queue is bounded in bytes: past the bound a read's followers are not
// pushed (counted as dropped), and they are read through requests as before.
//
// Threads: the constructor starts the push thread; Stop (or the destructor) drains nothing more,
// wakes it and joins it. Stop before the fuse_session is destroyed.
// Thread-safety: every other method is safe for concurrent use (atomic bitmaps sized at
// construction to the filesystem's largest inode number; larger inode numbers are never wanted).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/filesystem.h"
#include "core/stats.h"

namespace packfs {

// A fixed-size set of inode numbers, one bit each.
class InodeBits {
 public:
  explicit InodeBits(uint64_t max_ino);
  void Set(uint64_t ino);
  void Clear(uint64_t ino);
  bool Test(uint64_t ino) const;
  // Clears the bit; returns whether it was set.
  bool TestAndClear(uint64_t ino);

 private:
  uint64_t max_ino_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

class Pusher {
 public:
  // Bytes a pushed read brings: what the worker read, and where its followers' bytes are.
  struct Job {
    std::vector<uint8_t> buf;
    std::vector<Filesystem::Follower> followers;  // spans into buf
  };
  // `window`: bytes from the start of a read within which followers are pushed (0: never).
  // `queue_bytes`: most bytes of jobs waiting for the push thread. `release` takes each job's
  // buffer back once its pushes are done (e.g. into the workers' buffer pool).
  Pusher(fuse_session* se, uint64_t max_ino, uint64_t window, size_t queue_bytes, Stats& stats,
         std::function<void(std::vector<uint8_t>)> release);
  ~Pusher();
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  uint64_t window() const { return window_; }
  // The kernel got an entry for `ino` (LOOKUP or READDIRPLUS reply).
  void Known(uint64_t ino) { known_.Set(ino); }
  // The kernel forgot `ino`: its inode and page cache are gone.
  void Forgotten(uint64_t ino);
  // A READ of `ino` from offset 0 was answered: its bytes are in the kernel's cache now. Counts a
  // wasted push when it had been pushed (its pages were evicted before it was read).
  void Served(uint64_t ino);
  // Worth pushing: the kernel holds the inode and has not been given its bytes.
  bool Wanted(uint64_t ino) const { return known_.Test(ino) && !cached_.Test(ino); }
  // Hands a job to the push thread (after the reply to its read). Its followers count as given
  // to the kernel from now on, so the next reads do not pick them again; a job that does not
  // fit the queue is released at once, its followers not pushed.
  void Enqueue(Job job);
  // Stops the push thread (jobs still queued are released without pushing). Idempotent.
  void Stop();

 private:
  void Run();
  void PushOne(const Job& job);
  void Release(Job& job);

  fuse_session* se_;
  uint64_t window_;
  size_t queue_max_;
  Stats& stats_;
  std::function<void(std::vector<uint8_t>)> release_;
  InodeBits known_;   // the kernel holds an inode for it
  InodeBits cached_;  // its bytes were pushed (or queued) or read since the kernel got the inode
  InodeBits pushed_;  // pushed and not read through a request since

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  size_t queued_bytes_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace packfs
