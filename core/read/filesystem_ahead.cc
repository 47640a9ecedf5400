// Filesystem's reading ahead of requests: directories streamed into the page cache
// (core/read/dir_stream.h), the hint a lookup gives its file's shard (Prefetch) and the one a READ
// gives a file no lookup hinted on a network file system (ReadHint), and whether a push window
// pays (WindowPays). The reads themselves are in filesystem.cc.
#include "core/read/filesystem.h"

#include <fcntl.h>

#include <algorithm>
#include <mutex>

#include "core/read/page_cache.h"

namespace packfs {

void Filesystem::StreamDir(uint64_t dir) const {
  if (stream_) stream_->Want(dir);
}

void Filesystem::DrainStreams() const {
  if (stream_) stream_->Drain();
}

std::vector<DirStream::Extent> Filesystem::StreamExtents(uint64_t dir_id) const {
  std::vector<DirStream::Extent> out;
  Result<Node> dir = GetNode(dir_id);
  if (!dir.ok() || !dir->is_dir()) return out;
  // Per shard of a zip/tar source: the range from the first member's header to the last
  // member's end, and the bytes of the members in it. A remote source counts only where its
  // disk cache holds that range (ShardSource::HintFile), and is streamed from there.
  struct Span {
    const PackSet* set;
    uint32_t shard;
    uint64_t from, to, bytes;
  };
  std::vector<Span> spans;
  Status st = catalog_->ForRange(dir->first_child, dir->first_child + dir->child_count,
                                 [&](Node&& n) {
    if (n.is_dir() || n.size == 0) return true;
    SourceNode src = ToSource(n);
    if (!src.set->shard_files() && !src.set->local_copies()) return true;
    const uint64_t from = std::min(src.node.local_header_offset, src.node.data_offset);
    const uint64_t to = src.node.data_offset + src.node.size;
    auto it = std::find_if(spans.begin(), spans.end(), [&](const Span& s) {
      return s.set == src.set && s.shard == src.node.shard;
    });
    if (it == spans.end()) {
      spans.push_back(Span{src.set, src.node.shard, from, to, to - from});
    } else {
      it->from = std::min(it->from, from);
      it->to = std::max(it->to, to);
      it->bytes += to - from;
    }
    return spans.size() <= 64;  // a directory spread over more shards is not streamed
  });
  if (!st.ok() || spans.size() > 64) return out;
  for (const Span& s : spans) {
    // Mostly this directory's bytes: members written in another order would have the stream
    // read other directories' files too.
    if (s.bytes * 2 < s.to - s.from) continue;
    Result<ShardLease> lease = s.set->OpenShard(s.shard);
    if (!lease.ok()) continue;
    if ((*lease)->fd() >= 0) {
      out.push_back(DirStream::Extent{std::move(*lease), s.from, s.to, nullptr});
    } else if (std::shared_ptr<const UniqueFd> copy = (*lease)->HintFile(s.from, s.to - s.from)) {
      // A remote shard's disk cache holds the extent: streamed from there as from a shard file.
      out.push_back(DirStream::Extent{std::move(*lease), s.from, s.to, std::move(copy)});
    }
  }
  return out;
}

void Filesystem::Prefetch(const Node& file, uint64_t max_bytes, uint64_t span) const {
  if (file.is_dir() || file.size == 0 || file.size > max_bytes) return;
  SourceNode src = ToSource(file);
  if (src.set->raw_members()) return;  // loose or synthesized: no member range to hint
  // Its directory was streamed whole (core/read/dir_stream.h): its bytes came in already.
  if (stream_ && stream_->Streamed(file.parent)) return;
  Result<ShardLease> lease = src.set->OpenShard(src.node.shard);
  if (!lease.ok()) return;
  const uint64_t from = MemberStart(src);
  // A remote shard hints its disk cache's file where that holds the member: a cold copy costs a
  // disk request as a local shard does, and the lookup is as early a moment to ask for it.
  int fd = (*lease)->fd();
  std::shared_ptr<const UniqueFd> copy;
  if (fd < 0) {
    copy = (*lease)->HintFile(from, src.node.data_offset + src.node.size - from);
    if (!copy) return;
    fd = copy->get();
  }
  // At least `span` from the header on: a hint of exactly the member keeps the kernel from
  // reading ahead in the shard, so neighbours that are read too (an epoch) would each cost a disk
  // request of their own; where few are (a sample of the set), the span is bytes read for nothing.
  // On network storage a request costs a round trip and bytes are cheap by comparison: the span
  // always pays there (over sshfs, a pass over a third of a set ran 1.3x faster with it), but
  // for a walk in shard order, where the kernel's read-ahead of the shard streams the same bytes
  // in fewer and larger requests than overlapping hints cut it into (sshfs at 1 ms, 8 readers
  // walking a directory: 0.31 instead of 0.52 requests a file, 2.9-3.1k instead of 2.4-2.7k
  // files/s in two interleaved rounds).
  if (src.set->on_network_fs()) {
    if (NearLast(&last_lookup_, src, from)) {
      stats_.CountHint(Stats::HintEvent::kStreamed);
      return;
    }
    span = std::max(span, kPrefetchSpan);
  } else if (span > 0) {
    span = JudgeHint(file, fd, src) ? span : 0;
  }
  HintMember(fd, src, span);
}

uint64_t Filesystem::MemberStart(const SourceNode& src) {
  return std::min(src.node.local_header_offset, src.node.data_offset);
}

void Filesystem::HintMember(int fd, const SourceNode& src, uint64_t span) const {
  const uint64_t from = MemberStart(src);
  const uint64_t to = std::max(src.node.data_offset + src.node.size, from + span);
  (void)::posix_fadvise(fd, static_cast<off_t>(from), static_cast<off_t>(to - from),
                        POSIX_FADV_WILLNEED);
}

void Filesystem::ReadHint(const Node& file, const SourceNode& src, uint64_t offset,
                          bool looked_up) const {
  if (offset != 0 || looked_up || file.size > options_.read_hint_max) return;
  // Only files whose span holds neighbours: a larger file's own first READ asks for as much, and
  // its hint only added requests (sshfs at 1 ms, 4 readers at random over 50-200 KiB JPEGs after a
  // listing: 1.0k instead of 1.1k files/s, 1.35 instead of 1.28 requests a file).
  if (file.size > kPrefetchSpan / 2) return;
  if (!src.set->on_network_fs() || src.set->raw_members()) return;
  if (NearLast(&last_read_hint_, src, MemberStart(src))) return;
  Result<ShardLease> lease = src.set->OpenShard(src.node.shard);
  if (!lease.ok() || (*lease)->fd() < 0) return;
  stats_.CountHint(Stats::HintEvent::kRead);
  HintMember((*lease)->fd(), src, kPrefetchSpan);
}

bool Filesystem::NearLast(LastLookup* last, const SourceNode& src, uint64_t from) const {
  std::lock_guard<std::mutex> lock(last_lookup_mu_);
  const LastLookup before = *last;
  *last = LastLookup{src.set, src.node.shard, from};
  const uint64_t gap = from > before.from ? from - before.from : before.from - from;
  return before.set == src.set && before.shard == src.node.shard && gap <= kPrefetchSpan;
}

bool Filesystem::WindowPays(const SourceNode& src, uint64_t from, uint64_t to) const {
  if (!window_payoff_.Take()) return false;
  // The shard bytes of the window read kWindowsAgo windows ago: still cached, or evicted by
  // reclaim since? Evicted means memory does not hold what a window brings for that long, and
  // the files pushed with it (as old, and held twice) are going the same way, well before the
  // READs that would show it (an epoch after a scan pushes most of a set within its first
  // tenth of reads).
  std::optional<PushedWindow> old;
  {
    std::lock_guard<std::mutex> lock(windows_mu_);
    windows_.push_back(PushedWindow{src.set, src.node.shard, from, to});
    if (windows_.size() > kWindowsAgo) {
      old = windows_.front();
      windows_.pop_front();
    }
  }
  if (!old) return true;
  Result<ShardLease> lease = old->set->OpenShard(old->shard);
  if (!lease.ok() || (*lease)->fd() < 0) return true;
  std::optional<PageCacheState> st = CacheStateOf((*lease)->fd(), old->from, old->to - old->from);
  if (!st) return true;
  if (st->evicted > 0) stats_.CountPush(Stats::PushEvent::kEvictedWindow);
  if (window_payoff_.Count(1, st->evicted > 0 ? 1 : 0)) {
    stats_.CountPush(Stats::PushEvent::kPaused);
  }
  return true;
}

bool Filesystem::JudgeHint(const Node& file, int fd, const SourceNode& src) const {
  // Paused: memory is too short for the neighbours to wait for their turn (core/read/payoff.h).
  if (!hint_payoff_.Take()) return false;
  stats_.CountHint(Stats::HintEvent::kWide);
  // Before this lookup's own hint: did an earlier one (or the kernel's read-ahead) bring this
  // file's pages, and are they still here? Only the pages wholly inside the file count: a page it
  // shares with a neighbour read before says nothing of the hint.
  std::optional<PageCacheState> st = CacheStateOf(fd, src.node.data_offset, file.size);
  if (!st) return true;
  bool paused = false;
  if (st->evicted > 0) {
    stats_.CountHint(Stats::HintEvent::kEvicted);
    paused = hint_payoff_.Count(1, 1);
  } else if (st->cached > 0) {
    stats_.CountHint(Stats::HintEvent::kResident);
    paused = hint_payoff_.Count(1, 0);
  }
  if (paused) stats_.CountHint(Stats::HintEvent::kPaused);
  return true;
}

}  // namespace packfs
