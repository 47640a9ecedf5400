// Pusher: turns a shard's locality into reads that send no request. After a READ that reaches the
// end of a small file, the whole files that follow it in its shard, whose inodes the kernel holds
// (looked up or listed, not yet forgotten) and that it has not been given yet, are read with the
// same pread and pushed into the kernel's page cache (FUSE_NOTIFY_STORE); the reader's later
// open and read of those files are then served by the kernel alone.
//
// Why only known inodes: the kernel drops a push for an inode it does not hold (ENOENT), and by
// path it holds none of the neighbours until their LOOKUP, which comes just before their READ.
// After a directory scan (readdirplus) it holds them all, and pushing pays: one pread and one
// request serve the neighbours. By path, the mount makes that scan itself once a directory is
// ready (below): it lists the directory through its own mountpoint (fuse/dir_lister.h). Bits,
// not counts: a push for an inode the kernel dropped meanwhile fails cheaply, and a lost bit
// only costs one push.
//
// Nor an inode the kernel got from one of the last kFreshLookups LOOKUPs: by path, a LOOKUP is
// followed at once by its reader's READ, so with several readers the neighbours a read finds
// looked up are the files the other readers are about to read. Pushing one races its own READ,
// which nearly always comes anyway, and stretches the read to reach it (measured on sshfs at
// 1 ms, 8 readers at random by path, 5 interleaved rounds: 2.4k -> 2.7k files/s median, 0.80x ->
// 0.94x of raw pread there; without lookup hints the pushes took a file's fetch from 25 to 40 KiB;
// a local epoch by path or after a scan ran the same). Files looked up well before their read (a
// loader that stats its files first) are pushed as after a scan. The fresh set is a ring of
// inode numbers and a bit each; an inode looked up twice within the ring leaves it at the older
// lookup (it may be pushed a little early). Shards on a network file system push nothing at all
// (Filesystem::ReadThrough); remote shards push beside a READ only what their caches hold
// already, and fetch only for the walk of a ready directory (below).
//
// When it pays: a pushed file that is never read costs its share of the pread, a copy into the
// page cache and the memory, and a pass that reads a tenth of a set in random order would have
// the neighbours of every read pushed for nothing (measured: 60,000 files pushed to read 10,000,
// 0.6× the speed of not pushing). An epoch reads them all (2× after a scan). A random first tenth
// of an epoch looks the same as a tenth-of-the-set pass, so no signal tells them apart early;
// what does is how much of a directory has been read: a directory is pushed into only once
// kPushAfterPercent of its files have been served (read, or pushed), so a pass that reads a
// sample never pushes, and an epoch pushes for the rest of every directory once past its first
// part. Counts are kept per directory touched (at most kMaxDirs at once; past that they restart,
// which only delays pushing).
//
// When memory is short: on a set larger than the memory left for the page cache, pushed files
// are evicted before their turn and read again through requests, so the push cost a pread and a
// copy for nothing (measured: an epoch of 528 MiB in a 179 MiB memory cgroup pushed 0.79 files
// per file read and 0.76 came back as READs; pushing made it 25% slower than -o nopush). The
// walk (below) goes through a ready directory only when the memory left for the page cache
// (core/read/page_cache.h's MemoryRoom: the machine's and the cgroup's) holds its bytes twice (in
// the shard and in the files) and kWalkReserve besides; a directory the walk finds without that
// room is not pushed into by the reads' windows either from then on, and is read through
// requests as with -o nopush (counted in `walk_no_room`). Before, the reads' windows went on
// pushing where the walk would not (that epoch after a scan, 8 readers: 7.8k files pushed, 7.7k
// of them back as READs): 0.85x the files per second of -o nopush at random, 0.52-0.65x in shard
// order; now 0.96x and 0.94-1.07x (2 interleaved rounds, 2026-12-06; an epoch that fits in
// memory the same, 5 rounds). Judged by the walk thread, not by the read that makes the
// directory ready: on the read path the judgement (a look at the memory, and the directory's
// rows for its bytes) made an epoch that fits in memory 0.4-11% slower in 7 interleaved
// rounds. Until the walk judges, reads push (0.6-1.1k files an epoch in that cgroup); with
// -o nowalk, always. Within the room, two signals pause pushing (core/read/payoff.h): here,
// pushed files whose READ comes anyway (or whose inode is forgotten with the pages); in
// Filesystem::ReadThrough, the shard bytes of the window read 128 windows before found evicted
// by reclaim. The second comes early enough to matter: an epoch after a scan pushes most of a
// set within its first tenth of reads, long before the READs of evicted files arrive.
//
// Why a thread of its own: a push locks the file's pages in the kernel, and waits when a reader's
// read-ahead holds them while its READ is queued. Pushed from the FUSE workers, pushes could wait
// on READs that only those same workers can answer (measured: a 16-thread stress run slowed 30×).
// So the workers hand the bytes over and return to their requests; the push thread may wait,
// they never do. The queue is bounded in bytes: past the bound a read's followers are not
// pushed (counted as dropped), and they are read through requests as before.
//
// Walking a ready directory: pushing followers from READs reads windows that overlap (a window
// spans the files pushed before it) and leaves to chance which files are pushed before their
// reader comes. Once a directory is ready, a walk thread of its own goes through it in shard
// order and pushes every file still wanted, a window at a time, each byte read once. READs go
// on pushing their followers meanwhile; a file is given once either way (claimed with its cached
// bit). Measured (an epoch after a scan, 30,000 files, 2026-12-05): 0.29 READs a file against
// 0.38 without the walk, 1.16x / 1.24x the files per second with 2 / 8 readers. A walk of its
// own thread, not a push thread's: on one of the two push threads it held up the reads' pushes
// (8 readers: 29.1k against 30.0k files/s without it). Local shard files and remote sets (see
// "Remote shards"), not shards on a network file system: there the directory's bytes are
// streamed into the shard's page cache instead (Filesystem::StreamDir), and a READ that finds
// them there costs no network round trip.
//
// Readers in shard order (a loader that does not shuffle, several readers taking the next file
// in turn): the files after a READ are the ones the other readers are reading or about to read,
// and before, every READ read a window of its own over them, each spanning the files the
// windows before it were still pushing. 8 readers had the daemon read 3-12x the set's bytes
// (an epoch of 30,000 files after a scan: 14-28k files/s against 30-35k with -o nopush). So a
// window takes each file it brings (FollowerClaims, core/read/follower_claims.h: a bit per file,
// `coming_`, held until the push is made or the file is dropped or given back), a file taken is
// not wanted by any other window, and a window that meets one ends there: what follows is the
// other window's to bring (counted in `cut_short`). Now 1.3-1.9x the set's bytes are read (the
// files taken while their own READ was on its way are read twice) and that epoch reads
// 35-43k files/s (3 interleaved rounds; 2 readers +6%, 1 reader and random order unchanged).
// Not solved: the readers still get to most files before their push (0.64-0.78 READs a file),
// so the race decides: two benchmark runs of this build read 0.98x and 0.74x loose against
// 0.89x and 1.00x with -o nopush (bench/FINDINGS.md).
//
// Listing a ready directory: by path every file costs a LOOKUP and a READ, and nothing can be
// pushed. Once a directory is ready its remaining files will be read too, so a list thread lists
// it through the mount (a few READDIRPLUS requests: the kernel then holds every file's entry and
// inode), and only then hands it to the walk. Its remaining files are opened without a LOOKUP,
// and the walk pushes them before their readers come. Measured (an epoch by path, 30,000 files
// of 4-32 KiB in 30 directories, 2026-12-05, fresh mount and dropped caches each pass, 4
// interleaved rounds against -o nolist, every round won): 17.8k -> 26.1k files/s with 2 readers,
// 17.3k -> 24.8k with 8; 0.16-0.30 READs and 0.15-0.18 LOOKUPs a file instead of 1 and 1. A
// pass over a tenth of a set (no directory ready) and an epoch after a scan ran the same. A list
// thread of its own, not a FUSE worker: its listing waits for the workers to answer it.
//
// Remote shards (http://, s3://): a window there must not fetch files nobody asked for, so it
// brings only the followers whose bytes the remote reader's memory holds already: a walk over a
// shard (core/remote/remote_reader.h) reads 4 MiB and more ahead of its reads, and what it
// fetched is pushed beside the next READ instead of waiting for a READ of its own (no GET of its
// own; the pushed files count as read by the walk, so the READ after them goes on with it). Only
// for a walk one reader makes (the FUSE request's thread id, the last 8 of the walk's READs that
// asked from the same thread): several readers taking a shard's files in turn read the files
// after a READ themselves before the push lands (the local "Readers in shard order" above), and
// pushing there only costs CPU. (On a loaded machine one of several readers may get 8 READs in
// a row while the others wait for a CPU, and be lent to: seen once in a test run under ctest
// -j2.) Measured (nginx behind a 5 ms proxy, 1,000 files of 4-32 KiB listed and read in name
// order, fresh mount and dropped caches each pass, interleaved rounds, 2026-12-06): 1 reader
// 11.8-13.1k files/s against 8.1-11.1k with -o nopush (4 rounds; 0.2-0.5 READs a file instead
// of 1, the same GETs); 8 readers 14.3-18.0k against 14.3-16.4k, where pushing every window
// regardless read 11.6-16.2k (4 rounds, 0.9-1.0 READs a file with 500 files pushed).
// With a disk cache (--disk-cache), everything fetched is written through to it, so a window
// brings the followers it holds from there, at random too (a second mount, a later epoch), as
// from a local shard file; still not beside a walk several readers share (the walk counts its
// reads served from disk as well). Measured (3,000 files of 4-32 KiB over HTTP at 5 ms, the
// disk cache filled by a first pass, fresh mount and dropped caches each pass, 8 readers by
// path in a random order, 3 interleaved rounds, 2026-12-07): 16.9-17.7k files/s against
// 12.9-14.1k with -o nopush, 1,071-1,170 READs and 566-593 LOOKUPs of 3,000 instead of 3,000 and
// 3,003; a local mount of the same shards 21.2-22.5k.
// A ready directory of a remote set is walked as a local one is: past its first 15% its files
// are going to be read (the rule above), and over a network every file read on its own costs a
// round trip. The walk asks for its windows as Filesystem::kDirWalker, so the remote shard
// fetches each follower as its own read would, in shard order; the remote reader sees a walk
// there and reads ahead of it in parts up to the directory's end (RemoteReader::Walking), and
// the files are pushed without a READ or a GET of their own. What it costs: the bytes of the
// directory's files nobody reads, and unmounting waits for a fetch the walk is waiting for.
// Measured (nginx behind a 5 ms proxy, 3,000 files of 4-32 KiB in 3 directories of one shard,
// fresh mount and dropped caches each pass, 8 readers by path, 2 interleaved rounds,
// 2026-12-07): an epoch (every file once, shuffled) 5.2-6.3k files/s against 1.4k with remote
// directories not walked (544-700 GETs instead of 2,923); a random third of the set 1.3-1.6k
// against 1.3k, 745-769 GETs instead of 1,000 but 69 MB fetched instead of 18.5; one directory
// in name order the same (8.6-10.1k against 8.0-9.1k by path, 9.6-11.1k against 10.0-11.0k by
// one reader after a listing). -o nowalk: not walked.
//
// Threads: the constructor starts the push threads, StartWalks the walk thread, StartLists the
// list thread; Stop (or the destructor) drains nothing more, wakes them and joins the push and
// walk threads. The list thread is joined by the destructor only, after the session's /dev/fuse
// descriptor is closed: a listing under way waits for the answer to its request, and once the
// session is ending libfuse's workers drop the requests they read (a SIGTERM with readers
// running hung the daemon that way, its test with it); closing the descriptor (the unmount does)
// fails the request and ends the listing. Stop before the fuse_session is destroyed; destroy
// after it is unmounted.
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
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/stats.h"
#include "core/read/filesystem.h"
#include "core/read/payoff.h"

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
  // Sets the bit; returns whether it was set before (false for numbers past the set).
  bool TestAndSet(uint64_t ino);

 private:
  uint64_t max_ino_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

class Pusher final : public FollowerClaims {
 public:
  // Bytes a pushed read brings: what the worker read, and where its followers' bytes are.
  struct Job {
    std::vector<uint8_t> buf;
    std::vector<Filesystem::Follower> followers;  // spans into buf
    uint64_t dir = 0;                             // their directory
  };
  // Entries of a directory and their bytes (Filesystem::Children).
  using Children = std::function<Filesystem::ChildSpan(uint64_t dir)>;
  // Bytes the page cache can take without evicting (core/read/page_cache.h; nullopt: unknown).
  using Room = std::function<std::optional<uint64_t>()>;
  // Lists directory `dir` through the mount (fuse/dir_lister.h); false when it could not.
  using List = std::function<bool(uint64_t dir)>;
  // Kernel memory an entry listed takes, about (a dentry and a FUSE inode: ~1 KiB), with slack.
  static constexpr uint64_t kListBytesPerEntry = 2048;
  // Room kept free (as the directory stream does), and windows between two looks at it.
  static constexpr uint64_t kWalkReserve = 64ull << 20;
  static constexpr int kWalkCheckEvery = 8;
  // Reads file `ino` whole, with the wanted files that follow it in one window, into `job`
  // (`ino` itself first among its followers; all taken, FollowerClaims); false when it cannot
  // (another read took `ino`, it is not a small zip/tar member on a local file system, or a read
  // error: the file is then read through requests), nothing then left taken.
  using ReadRun = std::function<bool(uint64_t ino, Job* job)>;
  static constexpr uint64_t kPushAfterPercent = 15;
  static constexpr size_t kMaxDirs = 65536;
  // LOOKUPs an inode stays fresh for (not pushed): far more than the readers a client runs.
  static constexpr size_t kFreshLookups = 256;
  // `window`: bytes from the start of a read within which followers are pushed (0: never).
  // `queue_bytes`: most bytes of jobs waiting for the push thread. `release` takes each job's
  // buffer back once its pushes are done (e.g. into the workers' buffer pool).
  // `children(dir)` tells how many entries a directory holds (asked once per directory);
  // `on_ready(dir)` is called once, by the read that takes a directory past kPushAfterPercent
  // (e.g. to stream the rest of it, core/read/dir_stream.h).
  Pusher(fuse_session* se, uint64_t max_ino, uint64_t window, size_t queue_bytes, Stats& stats,
         std::function<void(std::vector<uint8_t>)> release,
         std::function<uint64_t(uint64_t dir)> children,
         std::function<void(uint64_t dir)> on_ready = {}, int threads = 1);
  ~Pusher();
  Pusher(const Pusher&) = delete;
  Pusher& operator=(const Pusher&) = delete;

  uint64_t window() const { return window_; }
  // The kernel got an entry for `ino` from a READDIRPLUS reply.
  void Known(uint64_t ino) { known_.Set(ino); }
  // ... from a LOOKUP reply: known, and fresh for the next kFreshLookups lookups.
  void LookedUp(uint64_t ino);
  // The kernel forgot `ino`: its inode and page cache are gone.
  void Forgotten(uint64_t ino);
  // A READ of `ino` (in directory `dir`) is being answered: the reader is reading it through
  // requests, so it is not one to push, and it counts as served in its directory. Counts a
  // wasted push when it had been pushed (its pages were evicted before it was read).
  void Served(uint64_t ino, uint64_t dir);
  // Whether enough of `dir` has been served for pushing into it to pay (see above).
  bool DirReady(uint64_t dir);
  // ... and the walk did not find it without room in memory (see above): whether a read in
  // `dir` may push its followers.
  bool MayPushInto(uint64_t dir);
  // Whether a read that qualifies may push now: false while pushing is paused because pushed
  // files were being evicted before their read (each call counts one read of the pause).
  bool Pays() { return payoff_.Take(); }
  // Worth pushing: the kernel holds the inode, has not been given its bytes (nor has another
  // read taken them to give), and did not look it up just now.
  bool Wanted(uint64_t ino) const override {
    return known_.Test(ino) && !cached_.Test(ino) && !fresh_.Test(ino) && !coming_.Test(ino);
  }
  // A read's window takes a follower (FollowerClaims, "Readers in shard order" above): kStop
  // when another read took it (counted in `cut_short`), kSkip when not wanted. The claim ends
  // when the file is pushed, or dropped from its job, or given back.
  Take TakeFollower(uint64_t ino) override;
  void GiveBack(uint64_t ino) override { coming_.Clear(ino); }
  // The push thread is behind (its queue over half full): a read should not read followers now,
  // they would likely be dropped.
  bool Busy() const { return busy_.load(std::memory_order_relaxed); }
  // Hands a job to the push thread (after the reply to its read). Its followers count as given
  // to the kernel from now on, so the next reads do not pick them again (those another read or
  // a walk took since this one picked them are left out); a job that does not fit the queue is
  // released at once, its followers not pushed.
  void Enqueue(Job job);
  // Starts the walk thread: from now on each directory that becomes ready is walked (above),
  // when the page cache has room for its bytes twice (in the shard and in the files) and
  // kWalkReserve; a walk stops when the room falls below what is left of it. Call once, before
  // serving.
  void StartWalks(Children children, ReadRun read_run, Room room);
  // Starts the list thread: from now on each directory that becomes ready is first listed
  // through the mount (fuse/dir_lister.h), so that the kernel holds its files' entries and
  // inodes (no LOOKUP when they are opened, and known to push into), then walked. Listed only
  // when the memory left has room for kListBytesPerEntry per entry and kWalkReserve. Call once,
  // before serving.
  void StartLists(List list, Room room);
  // Stops the push and walk threads (jobs still queued are released without pushing), and tells
  // the list thread to end after its listing (joined by the destructor: see above). Idempotent.
  void Stop();

 private:
  void Run();
  void RunWalks();
  void RunLists();
  // Hands a ready directory (of `entries` entries, as the push rule counted them) to the list
  // thread, or else to the walk thread (with mu_ held); false when neither runs.
  bool QueueReadyLocked(uint64_t dir, uint64_t entries);
  void Walk(uint64_t dir);
  bool Stopping();
  void PushOne(const Job& job);
  // Takes the followers of `job` not taken yet (sets their cached bit), drops the others.
  void Claim(Job& job);
  void Release(Job& job);

  fuse_session* se_;
  uint64_t window_;
  size_t queue_max_;
  Stats& stats_;
  std::function<void(std::vector<uint8_t>)> release_;
  std::function<uint64_t(uint64_t)> children_;
  std::function<void(uint64_t)> on_ready_;
  struct DirCount {
    uint64_t children = 0;
    uint64_t served = 0;
    bool no_room = false;  // the walk found no room in memory for it: not pushed into
  };
  std::mutex dirs_mu_;
  std::unordered_map<uint64_t, DirCount> dirs_;
  static bool Ready(const DirCount& c);
  // Adds `add` files served to `dir`'s count (made on its first use) and returns it; calls
  // on_ready_ when the add takes the directory past the rule.
  DirCount Count(uint64_t dir, uint64_t add);
  // The walk found no room for `dir`: reads stop pushing into it.
  void NoRoom(uint64_t dir);
  // A pushed file's pages went before it was read.
  void Wasted();
  Payoff payoff_;

  InodeBits known_;   // the kernel holds an inode for it
  InodeBits cached_;  // its bytes were pushed (or queued) or read since the kernel got the inode
  InodeBits pushed_;  // pushed and not read through a request since
  InodeBits coming_;  // taken by a read's or a walk's window, its push not made yet
  InodeBits fresh_;   // in fresh_ring_: looked up within the last kFreshLookups lookups
  std::mutex fresh_mu_;
  std::vector<uint64_t> fresh_ring_;  // kFreshLookups slots, 0 = empty
  size_t fresh_next_ = 0;             // the slot the next lookup takes

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  size_t queued_bytes_ = 0;
  std::atomic<bool> busy_{false};  // queued_bytes_ > queue_max_ / 2
  bool stop_ = false;
  std::vector<std::thread> threads_;

  Children walk_children_;
  ReadRun walk_read_;
  Room walk_room_;
  std::condition_variable walk_cv_;  // with mu_
  std::deque<uint64_t> walks_;       // ready directories still to walk
  std::thread walk_thread_;

  List list_;
  Room list_room_;
  std::condition_variable list_cv_;  // with mu_
  // Ready directories still to list (then to walk), with their entry counts.
  std::deque<std::pair<uint64_t, uint64_t>> lists_;
  std::thread list_thread_;
};

}  // namespace packfs
