// libfuse low-level callbacks over packfs::Filesystem.
#include "fuse/lowlevel_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/wait_notice.h"
#include "core/read/page_cache.h"
#include "fuse/read_ahead.h"
#include "fuse/uring_transport.h"

namespace packfs {
namespace {

SessionState& State(fuse_req_t req) {
  return *static_cast<SessionState*>(fuse_req_userdata(req));
}

// Logs an error and keeps it in the filesystem's list of recent errors (user.packfs.errors).
void ReportError(const SessionState& s, uint64_t ino, const std::string& message) {
  s.log->Error(message);
  try {
    s.fs->NoteError(ino, message);
  } catch (...) {
    // Out of memory while recording: the log line is out already.
  }
}

// Runs one callback body; anything thrown becomes EIO and a log line instead of unwinding into
// libfuse's C frames. Bodies reply before they can throw only in paths that cannot throw.
template <typename Body>
void Guard(fuse_req_t req, const char* op, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    ReportError(State(req), 0, std::string(op) + ": internal error: " + e.what());
    State(req).fs->stats().CountError();
    fuse_reply_err(req, EIO);
  } catch (...) {
    ReportError(State(req), 0, std::string(op) + ": internal error (unknown exception)");
    State(req).fs->stats().CountError();
    fuse_reply_err(req, EIO);
  }
}

// Replies with a core failure about node `ino`; errors other than "no such node" are logged and
// recorded.
void ReplyStatus(fuse_req_t req, const char* op, fuse_ino_t ino, const Status& st) {
  SessionState& s = State(req);
  s.fs->stats().CountError();
  if (st.code() != Code::kNotFound) ReportError(s, ino, std::string(op) + ": " + st.message());
  fuse_reply_err(req, ErrnoOf(st));
}

struct stat ToStat(const Attr& a) {
  struct stat st;
  std::memset(&st, 0, sizeof st);
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_size = static_cast<off_t>(a.size);
  st.st_blocks = static_cast<blkcnt_t>(a.blocks);
  st.st_blksize = 65536;
  st.st_mtim.tv_sec = a.mtime;
  st.st_atim.tv_sec = a.mtime;
  st.st_ctim.tv_sec = a.mtime;
  return st;
}

fuse_entry_param ToEntry(const SessionState& s, const Attr& a) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = a.ino;
  e.generation = 1;
  e.attr = ToStat(a);
  e.attr_timeout = s.config.attr_timeout;
  e.entry_timeout = s.config.entry_timeout;
  return e;
}

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto& s = *static_cast<SessionState*>(userdata);
  // Every listing is a readdirplus: one request hands the kernel names and attributes, so a
  // loader that scans its folders first pays no LOOKUP per file afterwards.
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
  // Data never changes: nothing to invalidate when attributes are refreshed.
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  if (s.config.zero_copy && s.config.splice) {
    conn->want |= conn->capable & (FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  }
  // libfuse derives the kernel's max_pages (the largest READ) from max_write, and insists that
  // max_read here equals the max_read mount option.
  if (conn->max_write < s.config.max_read) conn->max_write = s.config.max_read;
  conn->max_read = s.config.max_read;
  if (conn->max_background < 64) conn->max_background = 64;
  // The kernel offers its default (128 KiB); a smaller read-ahead needs no root this way.
  if (s.config.read_ahead < conn->max_readahead) conn->max_readahead = s.config.read_ahead;
  s.no_open_supported.store((conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) != 0);
  s.no_opendir_supported.store((conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0);
  try {
    if (s.on_ready) s.on_ready();
  } catch (...) {
    s.log->Error("init: could not report readiness");
  }
}

// Once INIT is through, which sets the mount's read-ahead (at most 128 KiB), the first request
// raises it to config.read_ahead (fuse/read_ahead.h). Without root it stays.
void RaiseReadAheadOnce(SessionState& s) {
  if (!s.read_ahead_pending.load(std::memory_order_relaxed) ||
      !s.read_ahead_pending.exchange(false)) {
    return;
  }
  if (s.device.empty()) return;
  Result<uint32_t> r = RaiseReadAhead(s.device, s.config.read_ahead >> 10);
  if (!r.ok() && ::geteuid() == 0) {
    s.log->Info("read-ahead left as it was: " + r.status().message());
  }
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Guard(req, "lookup", [&] {
    SessionState& s = State(req);
    RaiseReadAheadOnce(s);
    s.fs->stats().Count(RequestKind::kLookup);
    // A lookup by path is nearly always followed by a read: the disk read of a small file
    // starts now, overlapping the round trips of the reply, the open and the READ request.
    // Past the first 15% of a directory (the push rule, fuse/push.h) the hint takes what follows
    // the file in its shard too, which an epoch reads next; before, exactly the file, as a pass
    // over a sample of the set reads few neighbours (always taking them made such passes 15%
    // slower, never taking them made epochs by path 25-35% slower; 2026-12-02).
    // (Filesystem::Prefetch narrows it again while memory is too short to keep the neighbours.)
    // (The read that takes a directory past that rule also starts streaming the rest of it:
    // Pusher's on_ready, core/read/dir_stream.h.)
    const uint64_t span =
        s.pusher && s.pusher->DirReady(parent) ? Filesystem::kPrefetchSpan : 0;
    Result<std::optional<Attr>> r = s.fs->Lookup(parent, name, s.config.prefetch_max, span);
    if (!r.ok()) return ReplyStatus(req, "lookup", parent, r.status());
    if (!*r) {
      // A negative entry (ino 0) with a timeout: the kernel caches the absence of the name.
      fuse_entry_param e;
      std::memset(&e, 0, sizeof e);
      e.entry_timeout = s.config.negative_timeout;
      fuse_reply_entry(req, &e);
      return;
    }
    fuse_entry_param e = ToEntry(s, **r);
    if (fuse_reply_entry(req, &e) == 0 && s.pusher) s.pusher->LookedUp(e.ino);
  });
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t) {
  SessionState& s = State(req);
  if (s.pusher) s.pusher->Forgotten(ino);
  fuse_reply_none(req);
}
void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  SessionState& s = State(req);
  if (s.pusher) {
    for (size_t i = 0; i < count; ++i) s.pusher->Forgotten(forgets[i].ino);
  }
  fuse_reply_none(req);
}

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  Guard(req, "getattr", [&] {
    SessionState& s = State(req);
    RaiseReadAheadOnce(s);
    s.fs->stats().Count(RequestKind::kGetattr);
    Result<Attr> r = s.fs->GetAttr(ino);
    if (!r.ok()) return ReplyStatus(req, "getattr", ino, r.status());
    struct stat st = ToStat(*r);
    fuse_reply_attr(req, &st, s.config.attr_timeout);
  });
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "open", [&] {
    SessionState& s = State(req);
    s.fs->stats().Count(RequestKind::kOpen);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
      s.fs->stats().Count(RequestKind::kMutating);
      return (void)fuse_reply_err(req, EROFS);
    }
    Result<Attr> r = s.fs->GetAttr(ino);
    if (!r.ok()) return ReplyStatus(req, "open", ino, r.status());
    if (r->is_dir()) return (void)fuse_reply_err(req, EISDIR);
    // With no-open support the kernel stops sending OPEN (and RELEASE) after this answer and
    // keeps the page cache across opens: one request less per file.
    if (s.config.no_open && s.no_open_supported.load(std::memory_order_relaxed)) {
      return (void)fuse_reply_err(req, ENOSYS);
    }
    fi->keep_cache = 1;
    fi->noflush = 1;
    fuse_reply_open(req, fi);
  });
}

// The splice of a zero-copy reply reads the shard's pages: a worker (fuse/worker_loop.h) steps
// aside first unless they are all cached (cachestat; unknown counts as not cached).
void StepAsideUnlessCached(int fd, uint64_t offset, uint64_t length) {
  WaitNotice* notice = CurrentWaitNotice();
  if (notice == nullptr) return;
  const std::optional<PageCacheState> state = CacheStateOf(fd, offset, length);
  if (!state || state->cached < state->pages) notice->BeforeWait();
}

// Sends a READ's answer and counts its bytes: a window of a shard file zero-copy (libfuse
// splices it into /dev/fuse, or preads it into its buffer, without another copy of ours; the
// lease keeps the fd open until fuse_reply_data returns), pieces of memory a remote shard lends
// (one writev, no copy of ours), or bytes already read with one write to
// /dev/fuse (fewer system calls than a splice through a pipe, for small reads), counted before
// the reply so that the reader's next request sees them.
void SendReply(fuse_req_t req, const ReadReply& reply, Stats& stats) {
  if (reply.zero_copy()) {
    fuse_bufvec bv;
    std::memset(&bv, 0, sizeof bv);
    bv.count = 1;
    bv.buf[0].size = reply.window.length;
    bv.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    bv.buf[0].fd = reply.window.lease->fd();
    bv.buf[0].pos = static_cast<off_t>(reply.window.shard_offset);
    StepAsideUnlessCached(bv.buf[0].fd, reply.window.shard_offset, reply.window.length);
    if (fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE) == 0) stats.AddBytes(reply.window.length);
    return;
  }
  if (!reply.pieces.empty()) {
    // One writev from the memory the pieces lie in (a remote shard's cached blocks).
    std::vector<iovec> iov;
    size_t total = 0;
    for (const Extent& e : reply.pieces) {
      iov.push_back({const_cast<uint8_t*>(e->data()), e->size()});
      total += e->size();
    }
    stats.AddBytes(total);
    fuse_reply_iov(req, iov.data(), static_cast<int>(iov.size()));
    return;
  }
  stats.AddBytes(reply.bytes.size());
  fuse_reply_buf(req, reinterpret_cast<const char*>(reply.bytes.data()), reply.bytes.size());
}

// One READ, its node resolved once (Filesystem::ServeRead). With pushing on, a read that reaches
// the end of a small file in a local shard also brings the files that follow it in one pread (in
// a remote shard, those its cache holds already), and those the kernel holds an inode for are
// pushed into its cache after the reply (fuse/push.h).
void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  Guard(req, "read", [&] {
    SessionState& s = State(req);
    Stats& stats = s.fs->stats();
    stats.Count(RequestKind::kRead);
    auto start = std::chrono::steady_clock::now();
    stats.ReadStarted();
    struct InFlight {
      Stats& stats;
      std::chrono::steady_clock::time_point start;
      ~InFlight() {
        stats.ReadFinished();
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - start);
        stats.RecordReadLatency(static_cast<uint64_t>(us.count()));
      }
    } in_flight{stats, start};
    if (off < 0) return (void)fuse_reply_err(req, EINVAL);
    // Served through the ring, a reply is read straight into the ring entry's buffer (no copy of
    // ours; from a remote shard's cache, one) but for a member's first read, which brings its
    // local header along. Through /dev/fuse, windows up to zero_copy_max are spliced (or pieces
    // a remote shard lends written).
    const std::span<uint8_t> into = s.config.zero_copy ? UringTransport::ReplyArea()
                                                       : std::span<uint8_t>();
    const size_t zero_copy_min = s.config.zero_copy && into.empty() &&
                                         size <= s.config.zero_copy_max
                                     ? s.config.zero_copy_min
                                     : SIZE_MAX;
    // The buffer of copied bytes is the session's (fuse/read_buffers.h); it goes back to the
    // pool after the reply unless the push thread takes it with the followers.
    Pusher::Job job{s.read_buffers->Take(), {}};
    struct GiveBack {
      ReadBuffers& pool;
      std::vector<uint8_t>& buf;
      ~GiveBack() {
        if (buf.capacity()) pool.Give(std::move(buf));
      }
    } give_back{*s.read_buffers, job.buf};
    Result<ReadReply> got = ReadReply{};
    if (s.pusher) {
      Pusher& pusher = *s.pusher;
      got = s.fs->ReadThrough(
          ino, static_cast<uint64_t>(off), size, pusher.window(), zero_copy_min,
          [&pusher, &stats](uint64_t dir) {
            if (!pusher.MayPushInto(dir)) return false;
            if (pusher.Busy()) {  // the push threads are behind: counted, no followers now
              stats.CountPush(Stats::PushEvent::kBusy);
              return false;
            }
            return pusher.Pays();
          },
          pusher, fuse_req_ctx(req)->pid, &job.buf, &job.followers, &job.dir, into);
    } else {
      got = s.fs->ServeRead(ino, static_cast<uint64_t>(off), size, zero_copy_min, &job.buf,
                            into);
    }
    if (!got.ok()) return ReplyStatus(req, "read", ino, got.status());
    // A file read through requests is not one to push. Counted before the reply, so the
    // reader's next read already sees the count.
    if (s.pusher && !got->zero_copy()) s.pusher->Served(ino, job.dir);
    SendReply(req, *got, stats);
    if (!job.followers.empty()) s.pusher->Enqueue(std::move(job));
  });
}

void OpRelease(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Guard(req, "opendir", [&] {
    SessionState& s = State(req);
    s.fs->stats().Count(RequestKind::kOpendir);
    if ((fi->flags & O_ACCMODE) != O_RDONLY) return (void)fuse_reply_err(req, EROFS);
    Result<Attr> r = s.fs->GetAttr(ino);
    if (!r.ok()) return ReplyStatus(req, "opendir", ino, r.status());
    if (!r->is_dir()) return (void)fuse_reply_err(req, ENOTDIR);
    // With no-opendir support the kernel stops sending OPENDIR (and RELEASEDIR) after this
    // answer and opens every directory as if we had set cache_readdir and keep_cache: a listing
    // is read once per mount, and `find` saves two requests per directory.
    if (s.config.no_open && s.no_opendir_supported.load(std::memory_order_relaxed)) {
      return (void)fuse_reply_err(req, ENOSYS);
    }
    // Otherwise the same by asking: the kernel keeps the listing in its page cache across opens
    // (listings never change).
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
  });
}

void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  const char* op = plus ? "readdirplus" : "readdir";
  Guard(req, op, [&] {
    SessionState& s = State(req);
    s.fs->stats().Count(plus ? RequestKind::kReaddirplus : RequestKind::kReaddir);
    if (off < 0) return (void)fuse_reply_err(req, EINVAL);
    // Smallest entry: 24 bytes of header + name (readdir), plus 128 of attributes (plus); ask
    // the catalog for about as many entries as can fit.
    size_t per_entry = plus ? 160 : 32;
    const uint64_t want = size / per_entry + 1;
    std::vector<DirEntry> entries;
    if (std::optional<std::vector<DirEntry>> kept = s.listing_ahead->Take(ino, off)) {
      entries = std::move(*kept);
    } else {
      Status st = s.fs->ReadDir(ino, static_cast<uint64_t>(off), want, &entries);
      if (!st.ok()) return ReplyStatus(req, op, ino, st);
    }
    std::vector<char> buf(size);
    size_t used = 0;
    size_t sent = 0;
    for (const DirEntry& d : entries) {
      size_t room = size - used;
      size_t need;
      if (plus) {
        fuse_entry_param e = ToEntry(s, d.attr);
        need = fuse_add_direntry_plus(req, buf.data() + used, room, d.name.c_str(), &e,
                                      static_cast<off_t>(d.next_offset));
      } else {
        struct stat st_entry = ToStat(d.attr);
        need = fuse_add_direntry(req, buf.data() + used, room, d.name.c_str(), &st_entry,
                                 static_cast<off_t>(d.next_offset));
      }
      if (need > room) break;  // not added; the kernel asks again from this entry's offset
      used += need;
      ++sent;
      if (plus && s.pusher && d.name != "." && d.name != "..") s.pusher->Known(d.attr.ino);
    }
    fuse_reply_buf(req, buf.data(), used);
    // Not at the end (the reply was full, or the catalog gave all that was asked): read the
    // next part now, while the kernel takes this one in (fuse/listing_ahead.h). The request is
    // answered: nothing here may throw into Guard, and a failure only leaves the part unread.
    if (sent == 0 || (sent == entries.size() && entries.size() < want)) return;
    const uint64_t next = entries[sent - 1].next_offset;
    bool reserved = false;
    std::vector<DirEntry> ahead;
    try {
      reserved = s.listing_ahead->Reserve(ino, next);
      if (reserved && !s.fs->ReadDir(ino, next, want, &ahead).ok()) ahead.clear();
    } catch (...) {
      ahead.clear();
    }
    // Filled even when unread, so that a request waiting for the part reads it itself.
    if (reserved) s.listing_ahead->Fill(ino, next, std::move(ahead));
  });
}

void OpReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, false);
}
void OpReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadDirCommon(req, ino, size, off, true);
}

void OpStatfs(fuse_req_t req, fuse_ino_t) {
  Guard(req, "statfs", [&] {
    SessionState& s = State(req);
    s.fs->stats().Count(RequestKind::kStatfs);
    const FsTotals& t = s.fs->totals();
    struct statvfs st;
    std::memset(&st, 0, sizeof st);
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_blocks = (t.bytes + 4095) / 4096;
    st.f_files = t.files + t.directories;
    st.f_namemax = 255;
    st.f_flag = ST_RDONLY;
    fuse_reply_statfs(req, &st);
  });
}

void ReplyXattrValue(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) return (void)fuse_reply_xattr(req, value.size());  // size probe
  if (value.size() > size) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, value.data(), value.size());
}

void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Guard(req, "getxattr", [&] {
    SessionState& s = State(req);
    s.fs->stats().Count(RequestKind::kGetxattr);
    Result<std::optional<std::string>> r = s.fs->GetXattr(ino, name);
    if (!r.ok()) return ReplyStatus(req, "getxattr", ino, r.status());
    if (!*r) return (void)fuse_reply_err(req, ENODATA);
    ReplyXattrValue(req, **r, size);
  });
}

void OpListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Guard(req, "listxattr", [&] {
    SessionState& s = State(req);
    s.fs->stats().Count(RequestKind::kListxattr);
    Result<std::vector<std::string>> r = s.fs->ListXattr(ino);
    if (!r.ok()) return ReplyStatus(req, "listxattr", ino, r.status());
    std::string names;
    for (const auto& n : *r) names.append(n).push_back('\0');
    ReplyXattrValue(req, names, size);
  });
}

// Every request that would change something: the mount is read-only.
void Refuse(fuse_req_t req) {
  State(req).fs->stats().Count(RequestKind::kMutating);
  fuse_reply_err(req, EROFS);
}
void OpSetattr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) { Refuse(req); }
void OpMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { Refuse(req); }
void OpMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { Refuse(req); }
void OpUnlink(fuse_req_t req, fuse_ino_t, const char*) { Refuse(req); }
void OpRmdir(fuse_req_t req, fuse_ino_t, const char*) { Refuse(req); }
void OpSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { Refuse(req); }
void OpRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) {
  Refuse(req);
}
void OpLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { Refuse(req); }
void OpWrite(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) {
  Refuse(req);
}
void OpCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) { Refuse(req); }
void OpSetxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
  Refuse(req);
}
void OpRemovexattr(fuse_req_t req, fuse_ino_t, const char*) { Refuse(req); }
void OpFallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) { Refuse(req); }

}  // namespace

int ErrnoOf(const Status& status) {
  if (status.ok()) return 0;
  return status.err() > 0 ? status.err() : EIO;
}

fuse_lowlevel_ops MakeLowlevelOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof ops);
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetattr;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  ops.opendir = OpOpendir;
  ops.readdir = OpReaddir;
  ops.readdirplus = OpReaddirplus;
  ops.statfs = OpStatfs;
  ops.getxattr = OpGetxattr;
  ops.listxattr = OpListxattr;
  ops.setattr = OpSetattr;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpRmdir;
  ops.symlink = OpSymlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.write = OpWrite;
  ops.create = OpCreate;
  ops.setxattr = OpSetxattr;
  ops.removexattr = OpRemovexattr;
  ops.fallocate = OpFallocate;
  return ops;
}

}  // namespace packfs
