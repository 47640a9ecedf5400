// RemoteReader, what it reads ahead of its readers: a sequential stream's window, a walk over
// small members in shard order, and the blocks that come with a small member read at random
// (see remote_reader.h).
#include "core/remote/remote_reader.h"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace packfs {
namespace {

// Per-object state maps (sequential streams, walks) hold at most 4096 entries: a new one
// replaces the one used least recently (entries carry last_use).
template <typename Map>
void EraseLeastRecentWhenFull(Map& map) {
  if (map.size() < 4096) return;
  auto oldest = map.begin();
  for (auto e = map.begin(); e != map.end(); ++e) {
    if (e->second.last_use < oldest->second.last_use) oldest = e;
  }
  map.erase(oldest);
}

}  // namespace

uint64_t RemoteReader::Slack() const {
  // FUSE workers deliver a sequential reader's 128 KiB pieces slightly out of order: a read
  // within this distance of where the last ended still continues the stream.
  if (options_.sequential_slack != 0) return options_.sequential_slack;
  return std::max<uint64_t>(uint64_t{1} << 20, 4 * options_.block_size);
}

uint64_t RemoteReader::DropDistance() const {
  // Reads of one sequential reader arrive out of order by one READ (up to 1 MiB) at most: two
  // workers, or the two FUSE io_uring threads of a queue, take turns and finish in either order.
  // A read one behind must still find its blocks: at 512 KiB they had been dropped and were
  // fetched again, a round trip each, on every other read over the ring (300 instead of
  // 700-800 MB/s from a warm server behind 20 ms).
  const uint64_t bs = options_.block_size;
  return std::max<uint64_t>(2, ((2 << 20) + bs - 1) / bs) * bs;
}

uint64_t RemoteReader::WindowCapLocked(uint64_t streams) const {
  // Each sequential reader holds its window ahead and DropDistance() behind; together they
  // stay within the read-ahead budget (windows that outgrow it would evict each other's
  // read-ahead before it is read, and fetch it again).
  const uint64_t share = options_.max_window / std::max<uint64_t>(1, streams);
  return std::max(options_.block_size, share > DropDistance() ? share - DropDistance() : 0);
}

uint64_t RemoteReader::Window(const std::string& key, uint64_t begin, uint64_t offset, size_t n) {
  const uint64_t slack = Slack();
  std::string skey = key;
  skey += '\n';
  skey += std::to_string(begin);
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = streams_.find(skey);
  if (it == streams_.end()) {
    EraseLeastRecentWhenFull(streams_);
    Stream s;
    // A first read at the member's start is taken as the start of a sequential read.
    s.window = offset - begin <= 2 * options_.block_size && options_.sequential_before_window == 0
                   ? std::min(options_.min_window, WindowCapLocked(active_streams_ + 1))
                   : 0;
    s.next = offset + n;
    s.run = n;
    s.last_use = ++stream_clock_;
    s.last_time = std::chrono::steady_clock::now();
    streams_.emplace(std::move(skey), s);
    counted_at_ = {};  // recount the active streams at the next read
    return s.window;
  }
  Stream& s = it->second;
  s.last_use = ++stream_clock_;
  const auto now = std::chrono::steady_clock::now();
  s.last_time = now;
  if (now - counted_at_ > std::chrono::milliseconds(100)) {
    counted_at_ = now;
    active_streams_ = 0;
    for (const auto& [k, st] : streams_) {
      active_streams_ += st.window > 0 && now - st.last_time < std::chrono::seconds(1);
    }
  }
  const uint64_t cap = WindowCapLocked(active_streams_);
  // A read continues the stream when it starts within `slack` past where the stream got to, or
  // ends within `slack` before it (a read that arrived after the one that followed it).
  if (offset + n + slack >= s.next && offset <= s.next + slack) {
    s.run += n;
    if (s.run < options_.sequential_before_window) {
      s.window = 0;
    } else {
      s.window = s.window == 0 ? std::min(options_.min_window, cap) : std::min(2 * s.window, cap);
    }
    s.next = std::max(s.next, offset + n);
  } else {
    s.window = 0;
    s.next = offset + n;
    s.run = n;
  }
  return s.window;
}

bool RemoteReader::Walking(const std::string& key, uint64_t begin, uint64_t end,
                           uint64_t run_end, uint64_t* reach) {
  // A neighbour starts where a recently read member ended, or ends where one began (a tar member
  // and the padding before the next: within 4 KiB). Readers in several threads hand members over
  // out of order, and one may be late by the time of a few others, so any of the last 16 members
  // counts, on either side. A walk is a neighbour after at least two others among the last 16:
  // random reads are neighbours of a recent member rarely, and three times in sixteen almost never.
  // Once walking, the stretch walked so far is remembered (see `behind`).
  constexpr uint64_t kGap = 4096;
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = walks_.find(key);
  if (it == walks_.end()) {
    EraseLeastRecentWhenFull(walks_);
    it = walks_.emplace(key, Walk{}).first;
  }
  Walk& w = it->second;
  w.last_use = ++stream_clock_;
  w.last_time = std::chrono::steady_clock::now();
  bool adjacent = false;
  size_t neighbours = 0;
  for (size_t i = 0; i < w.recent_n; ++i) {
    const Walk::Member& m = w.recent[i];
    if (m.begin == begin) {
      *reach = w.reach;
      return m.walked;
    }
    adjacent = adjacent || (begin >= m.end && begin <= m.end + kGap) ||
               (m.begin >= end && m.begin <= end + kGap);
    neighbours += m.neighbour;
  }
  // A member inside the stretch a walk has read (a reader that fell behind the others by more
  // than 16 members), or a little ahead of it (one that got ahead of the readers of the members
  // before it), belongs to it too: its blocks were fetched, or are being read ahead. Once more
  // than 16 members in a row were nobody's neighbour, the walk has ended and its stretch is
  // forgotten: later random reads inside it must not each read ahead 4 MiB.
  w.strays = adjacent ? 0 : w.strays + 1;
  if (w.strays > Walk::kRecent) w.walk_begin = w.walk_end = 0;
  const bool behind = w.walk_end > w.walk_begin && begin + kGap >= w.walk_begin &&
                      begin <= w.walk_end + Slack();
  const bool walked = behind || (adjacent && neighbours >= 2);
  // A walk reads ahead to the end of the directory it starts in (its run of members here): a
  // reader done with that directory may go nowhere near the next one. Once it reads past that
  // end, it is going through directory after directory (cp -r of a tree, a loader in shard
  // order), and reads ahead to the object's end.
  if (walked && !behind) {
    w.walk_begin = begin;  // a walk (re)starts here
    w.walk_end = end;
    w.reach = run_end > end ? run_end : 0;
  } else if (walked) {
    w.walk_begin = std::min(w.walk_begin, begin);
    w.walk_end = std::max(w.walk_end, end);
    if (end > w.reach) w.reach = 0;
  }
  *reach = w.reach;
  w.recent[w.recent_at] = Walk::Member{begin, end, adjacent, walked};
  w.recent_at = (w.recent_at + 1) % Walk::kRecent;
  w.recent_n = std::min(w.recent_n + 1, Walk::kRecent);
  return walked;
}

uint64_t RemoteReader::WalkWindow(const std::string& key) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = walks_.find(key);
  if (it == walks_.end()) return options_.walk_window;
  const Walk& w = it->second;
  const auto now = std::chrono::steady_clock::now();
  if (now - walks_counted_at_ > std::chrono::milliseconds(100)) {
    walks_counted_at_ = now;
    active_walks_ = 0;
    for (const auto& [k, other] : walks_) {
      active_walks_ += other.walk_end > other.walk_begin &&
                       now - other.last_time < std::chrono::seconds(1);
    }
  }
  const uint64_t cap = WindowCapLocked(active_streams_ + std::max<uint64_t>(active_walks_, 1));
  const uint64_t stretch = w.walk_end > w.walk_begin ? w.walk_end - w.walk_begin : 0;
  uint64_t window = options_.walk_window;
  while (window * 2 <= std::min(cap, stretch)) window *= 2;
  return window;
}

bool RemoteReader::WalkAlone(const std::string& key, uint64_t begin, uint64_t reader,
                             bool* shared) {
  if (shared) *shared = false;
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = walks_.find(key);
  if (it == walks_.end()) return false;
  Walk& w = it->second;
  if (w.asked == 0 || reader != w.last_reader) {
    w.last_reader = reader;
    w.reader_since = w.asked;
  }
  ++w.asked;
  if (w.walk_end <= w.walk_begin || begin + 4096 < w.walk_begin || begin > w.walk_end + Slack()) {
    return false;  // no walk under way here: a member some other read left in memory
  }
  if (w.asked - w.reader_since < Walk::kAlone) {  // several readers (see above)
    ++walk_lend_shared_;
    if (shared) *shared = true;
    return false;
  }
  return true;
}

void RemoteReader::NoteWalked(const std::string& key, uint64_t begin, uint64_t end) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = walks_.find(key);
  if (it == walks_.end()) return;
  Walk& w = it->second;
  w.last_use = ++stream_clock_;
  w.walk_begin = w.walk_end > w.walk_begin ? std::min(w.walk_begin, begin) : begin;
  w.walk_end = std::max(w.walk_end, end);
  w.strays = 0;
  for (size_t i = 0; i < w.recent_n; ++i) {
    if (w.recent[i].begin == begin) return;
  }
  w.recent[w.recent_at] = Walk::Member{begin, end, true, true};
  w.recent_at = (w.recent_at + 1) % Walk::kRecent;
  w.recent_n = std::min(w.recent_n + 1, Walk::kRecent);
}

bool RemoteReader::ByBlock(const std::string& key, uint64_t begin, uint64_t end) {
  if (end - begin > options_.block_member_limit) return false;
  const uint64_t bs = options_.block_size;
  bool held = true;
  for (uint64_t b = begin / bs; held && b * bs < end; ++b) held = memory_.Contains(key, b * bs);
  return held || block_judge_.Take();
}

bool RemoteReader::AheadUnitPays() {
  const uint64_t unit = std::max(options_.block_fetch_bytes, options_.block_size);
  return memory_.capacity() >= 16 * unit &&
         memory_.pending_bytes() + unit <= memory_.capacity() / 2 && block_judge_.PaysWell();
}

bool RemoteReader::BlockJudge::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pause_left_ == 0) return true;
  --pause_left_;
  return false;
}

bool RemoteReader::BlockJudge::Fetched(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  fetched_ += n;
  if (fetched_ < kJudge) return false;
  const bool pays = hits_ * 16 >= fetched_;
  pays_well_ = hits_ * 2 >= fetched_;
  fetched_ = hits_ = 0;
  if (pays) {
    next_pause_ = kFirstPause;
    return false;
  }
  pause_left_ = next_pause_;
  next_pause_ = std::min(2 * next_pause_, kMaxPause);
  return true;
}

void RemoteReader::BlockJudge::Hit() {
  std::lock_guard<std::mutex> lock(mu_);
  ++hits_;
}

bool RemoteReader::BlockJudge::PaysWell() {
  std::lock_guard<std::mutex> lock(mu_);
  return pays_well_ && pause_left_ == 0;
}

}  // namespace packfs
