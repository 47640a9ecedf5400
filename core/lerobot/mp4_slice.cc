// SliceMp4: choosing the decode range of every kept track, laying their bytes out as merged
// extents, and writing the new moov (sample tables rebuilt for the range).
#include "core/lerobot/mp4_slice.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace packfs {

uint64_t Mp4Slice::size() const {
  uint64_t n = head.size();
  for (const auto& e : extents) n += e.length;
  return n;
}

namespace {

// One kept track: decode-order samples [first, last] and the edit that presents the range.
struct TrackCut {
  const Mp4Track* track = nullptr;
  size_t first = 0, last = 0;     // inclusive, decode order
  int64_t media_time = 0;         // elst media_time in the new media timeline
  uint64_t segment_duration = 0;  // elst segment duration, movie timescale
  uint64_t media_duration = 0;    // sum of sample durations in the range
  std::vector<uint64_t> out_pos;  // payload position of each sample (filled by the layout)
};

// Walks back from decode index `i` to a sync sample presented no later than `pts` (an open-GOP
// I-frame can be presented after B-frames that need the previous GOP). Returns false if none.
bool BackToSync(const Mp4Track& t, size_t i, int64_t pts, size_t* out) {
  for (size_t j = i + 1; j-- > 0;) {
    if (t.samples[j].sync && t.PresentationTime(t.samples[j]) <= pts) {
      *out = j;
      return true;
    }
  }
  return false;
}

// Finishes a cut: media duration, the edit's media_time for presentation start `start_pts`, and
// its segment duration (in the output movie's timescale).
Status FinishCut(const Mp4Movie& m, TrackCut* c, int64_t start_pts, uint64_t segment_duration) {
  const Mp4Track& t = *c->track;
  for (size_t i = c->first; i <= c->last; ++i) c->media_duration += t.samples[i].duration;
  c->media_time = start_pts + t.presentation_shift - t.samples[c->first].dts;
  if (c->media_time < 0) {
    if (t.handler != FourCC("vide")) {
      c->media_time = 0;  // audio that starts a little late: present what there is
    } else {
      return Status::NotSupported(m.name() + ": track " + std::to_string(t.track_id) +
                                  " presents a frame before its decode start (negative "
                                  "composition offsets), which packfs cannot slice");
    }
  }
  c->segment_duration = segment_duration;
  return Status::OK();
}

// A secondary track cut to the seconds [t0, t1); false when no sample overlaps.
bool CutByTime(const Mp4Movie& m, const Mp4Track& t, double t0, double t1,
               uint32_t movie_timescale, TrackCut* c) {
  auto a0 = static_cast<int64_t>(std::llround(t0 * t.timescale));
  auto a1 = static_cast<int64_t>(std::llround(t1 * t.timescale));
  size_t lo = std::numeric_limits<size_t>::max(), hi = 0;
  for (size_t i = 0; i < t.samples.size(); ++i) {
    int64_t p = t.PresentationTime(t.samples[i]);
    if (p < a1 && p + t.samples[i].duration > a0) {
      lo = std::min(lo, i);
      hi = std::max(hi, i);
    }
  }
  if (lo > hi || !BackToSync(t, lo, a0, &c->first)) return false;
  c->track = &t;
  c->last = hi;
  const auto segment = static_cast<uint64_t>(std::llround((t1 - t0) * movie_timescale));
  return FinishCut(m, c, a0, segment).ok();
}

// Source byte ranges of every kept sample, merged into extents; fills each cut's out_pos.
std::vector<Mp4Extent> Layout(std::vector<TrackCut>* cuts) {
  std::vector<Mp4Extent> ranges;
  for (const auto& c : *cuts) {
    for (size_t i = c.first; i <= c.last; ++i) {
      const Mp4Sample& s = c.track->samples[i];
      ranges.push_back({s.offset, s.size});
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Mp4Extent& a, const Mp4Extent& b) { return a.source_offset < b.source_offset; });
  std::vector<Mp4Extent> ext;
  for (const auto& r : ranges) {
    if (!ext.empty()) {
      Mp4Extent& e = ext.back();
      uint64_t end = e.source_offset + e.length;
      if (r.source_offset <= end + kMp4ExtentMergeGap) {
        e.length = std::max(end, r.source_offset + r.length) - e.source_offset;
        continue;
      }
    }
    ext.push_back(r);
  }
  std::vector<uint64_t> starts(ext.size());  // payload position of each extent
  uint64_t pos = 0;
  for (size_t k = 0; k < ext.size(); ++k) {
    starts[k] = pos;
    pos += ext[k].length;
  }
  for (auto& c : *cuts) {
    for (size_t i = c.first; i <= c.last; ++i) {
      uint64_t off = c.track->samples[i].offset;
      auto it = std::upper_bound(ext.begin(), ext.end(), off, [](uint64_t o, const Mp4Extent& e) {
        return o < e.source_offset;
      });
      size_t k = static_cast<size_t>(it - ext.begin()) - 1;
      c.out_pos.push_back(starts[k] + (off - ext[k].source_offset));
    }
  }
  return ext;
}

// Copies a full box whose header is `whole`, replacing the duration field at `v0_at`/`v1_at`
// (payload offsets for version 0/1) with `duration`, and when `timescale` is not 0 the 32-bit
// timescale field just before it.
void PatchedDurationBox(BoxWriter& w, std::span<const uint8_t> whole, size_t v0_at, size_t v1_at,
                        uint64_t duration, uint32_t timescale = 0) {
  size_t header = (whole[0] == 0 && whole[1] == 0 && whole[2] == 0 && whole[3] == 1) ? 16 : 8;
  uint32_t type = (uint32_t{whole[4]} << 24) | (uint32_t{whole[5]} << 16) |
                  (uint32_t{whole[6]} << 8) | whole[7];
  std::vector<uint8_t> payload(whole.begin() + static_cast<std::ptrdiff_t>(header), whole.end());
  bool v1 = payload[0] == 1;
  size_t at = v1 ? v1_at : v0_at;
  size_t width = v1 ? 8 : 4;
  if (!v1) duration = std::min<uint64_t>(duration, 0xffffffffu);
  for (size_t k = 0; k < width; ++k) {
    payload[at + k] = static_cast<uint8_t>(duration >> (8 * (width - 1 - k)));
  }
  for (size_t k = 0; timescale != 0 && k < 4; ++k) {
    payload[at - 4 + k] = static_cast<uint8_t>(timescale >> (8 * (3 - k)));
  }
  size_t b = w.Begin(type);
  w.Bytes(payload);
  w.End(b);
}

void WriteStbl(BoxWriter& w, const TrackCut& c, uint64_t base, bool co64) {
  const Mp4Track& t = *c.track;
  auto S = [&](size_t i) -> const Mp4Sample& { return t.samples[c.first + i]; };
  size_t n = c.last - c.first + 1;
  size_t stbl = w.Begin(FourCC("stbl"));
  w.Bytes(t.stsd);

  // stts / ctts: run-length over the range.
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  auto add = [&runs](uint32_t v) {
    if (!runs.empty() && runs.back().second == v) {
      ++runs.back().first;
    } else {
      runs.emplace_back(1, v);
    }
  };
  for (size_t i = 0; i < n; ++i) add(S(i).duration);
  size_t b = w.BeginFull(FourCC("stts"), 0, 0);
  w.U32(static_cast<uint32_t>(runs.size()));
  for (auto [count, v] : runs) w.U32(count), w.U32(v);
  w.End(b);
  if (t.has_ctts) {
    runs.clear();
    for (size_t i = 0; i < n; ++i) add(static_cast<uint32_t>(S(i).cts));
    b = w.BeginFull(FourCC("ctts"), t.ctts_negative ? 1 : 0, 0);
    w.U32(static_cast<uint32_t>(runs.size()));
    for (auto [count, v] : runs) w.U32(count), w.U32(v);
    w.End(b);
  }
  if (t.has_stss) {
    std::vector<uint32_t> sync;
    for (size_t i = 0; i < n; ++i) {
      if (S(i).sync) sync.push_back(static_cast<uint32_t>(i + 1));
    }
    b = w.BeginFull(FourCC("stss"), 0, 0);
    w.U32(static_cast<uint32_t>(sync.size()));
    for (uint32_t x : sync) w.U32(x);
    w.End(b);
  }
  if (t.has_sdtp) {
    b = w.BeginFull(FourCC("sdtp"), 0, 0);
    for (size_t i = 0; i < n; ++i) w.U8(S(i).sdtp);
    w.End(b);
  }
  // Chunks: a new chunk wherever a sample does not directly follow the previous one in the output.
  std::vector<uint64_t> chunk_pos;
  std::vector<uint32_t> chunk_len;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || c.out_pos[i] != c.out_pos[i - 1] + S(i - 1).size) {
      chunk_pos.push_back(c.out_pos[i]);
      chunk_len.push_back(0);
    }
    ++chunk_len.back();
  }
  b = w.BeginFull(FourCC("stsc"), 0, 0);
  size_t count_at = w.size();
  w.U32(0);
  uint32_t entries = 0;
  for (size_t k = 0; k < chunk_len.size(); ++k) {
    if (k > 0 && chunk_len[k] == chunk_len[k - 1]) continue;
    w.U32(static_cast<uint32_t>(k + 1));
    w.U32(chunk_len[k]);
    w.U32(1);
    ++entries;
  }
  w.End(b);
  w.PatchU32(count_at, entries);
  b = w.BeginFull(FourCC("stsz"), 0, 0);
  w.U32(0);
  w.U32(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) w.U32(S(i).size);
  w.End(b);
  b = w.BeginFull(FourCC(co64 ? "co64" : "stco"), 0, 0);
  w.U32(static_cast<uint32_t>(chunk_pos.size()));
  for (uint64_t p : chunk_pos) {
    if (co64) {
      w.U64(base + p);
    } else {
      w.U32(static_cast<uint32_t>(base + p));
    }
  }
  w.End(b);
  w.End(stbl);
}

// `movie_timescale`: the output's (the video track's), which every segment_duration is in.
std::vector<uint8_t> WriteMoov(const Mp4Movie& m, const std::vector<TrackCut>& cuts,
                               uint32_t movie_timescale, uint64_t base, bool co64) {
  std::vector<uint8_t> out;
  BoxWriter w(&out);
  size_t moov = w.Begin(FourCC("moov"));
  uint64_t movie_duration = 0;
  for (const auto& c : cuts) movie_duration = std::max(movie_duration, c.segment_duration);
  PatchedDurationBox(w, m.mvhd(), 16, 24, movie_duration, movie_timescale);
  for (const auto& c : cuts) {
    const Mp4Track& t = *c.track;
    size_t trak = w.Begin(FourCC("trak"));
    PatchedDurationBox(w, t.tkhd, 20, 28, c.segment_duration);
    size_t edts = w.Begin(FourCC("edts"));
    bool wide = c.segment_duration > 0xffffffffu || c.media_time > 0x7fffffff;
    size_t elst = w.BeginFull(FourCC("elst"), wide ? 1 : 0, 0);
    w.U32(1);
    if (wide) {
      w.U64(c.segment_duration);
      w.U64(static_cast<uint64_t>(c.media_time));
    } else {
      w.U32(static_cast<uint32_t>(c.segment_duration));
      w.U32(static_cast<uint32_t>(c.media_time));
    }
    w.U32(0x00010000);  // media rate 1.0
    w.End(elst);
    w.End(edts);
    size_t mdia = w.Begin(FourCC("mdia"));
    PatchedDurationBox(w, t.mdhd, 16, 24, c.media_duration);
    w.Bytes(t.hdlr);
    size_t minf = w.Begin(FourCC("minf"));
    w.Bytes(t.minf_other);
    WriteStbl(w, c, base, co64);
    w.End(minf);
    w.End(mdia);
    w.End(trak);
  }
  w.Bytes(m.udta());
  w.End(moov);
  return out;
}

}  // namespace

Result<Mp4Slice> SliceMp4(const Mp4Movie& m, const Mp4SliceRequest& req) {
  const Mp4Track* v = m.video_track();
  if (!v || v->samples.empty()) {
    return Status::NotSupported(m.name() + ": no video track with samples to slice");
  }
  const auto& s = v->samples;
  const std::vector<uint32_t>& order = v->presentation_order;
  if (order.size() != s.size()) {
    return Status::Corruption(m.name() + ": presentation order not computed for the video track");
  }
  auto pts_at = [&](size_t k) { return v->PresentationTime(s[order[k]]); };
  double ts = v->timescale;
  if (!std::isfinite(req.from_seconds) || !std::isfinite(req.to_seconds)) {
    return Status::InvalidArgument(m.name() + ": slice times must be finite");
  }
  double target = req.from_seconds * ts;
  auto it = std::lower_bound(order.begin(), order.end(), target, [&](uint32_t i, double x) {
    return static_cast<double>(v->PresentationTime(s[i])) < x;
  });
  size_t p0 = static_cast<size_t>(it - order.begin());
  if (p0 == order.size() ||
      (p0 > 0 && target - static_cast<double>(pts_at(p0 - 1)) <
                     static_cast<double>(pts_at(p0)) - target)) {
    --p0;
  }
  double half = std::max<double>(s[order[p0]].duration, 1) / 2 + 1e-6 * ts;
  if (std::fabs(static_cast<double>(pts_at(p0)) - target) > half) {
    return Status::InvalidArgument(m.name() + ": no video frame at " +
                                   std::to_string(req.from_seconds) + " s (nearest is at " +
                                   std::to_string(static_cast<double>(pts_at(p0)) / ts) + " s)");
  }
  uint64_t count = req.frame_count;
  if (count == 0) {
    double end = req.to_seconds * ts;
    for (size_t k = p0; k < order.size(); ++k) {
      if (static_cast<double>(pts_at(k)) >= end - static_cast<double>(s[order[k]].duration) / 2) {
        break;
      }
      ++count;
    }
    if (count == 0) return Status::InvalidArgument(m.name() + ": empty slice time range");
  }
  if (count > order.size() - p0) {
    return Status::InvalidArgument(m.name() + ": slice asks for " + std::to_string(count) +
                                   " frames from " + std::to_string(req.from_seconds) +
                                   " s but the video has only " +
                                   std::to_string(order.size() - p0) + " from there");
  }
  size_t lo = order[p0], hi = order[p0];
  for (size_t k = p0; k < p0 + count; ++k) {
    lo = std::min<size_t>(lo, order[k]);
    hi = std::max<size_t>(hi, order[k]);
  }
  int64_t start_pts = pts_at(p0);
  const Mp4Sample& last = s[order[p0 + count - 1]];
  int64_t end_pts = v->PresentationTime(last) + last.duration;
  TrackCut vc;
  vc.track = v;
  vc.last = hi;
  if (!BackToSync(*v, lo, start_pts, &vc.first)) {
    return Status::Corruption(m.name() + ": no sync sample (keyframe) before the frame at " +
                              std::to_string(req.from_seconds) + " s");
  }
  double t0 = static_cast<double>(start_pts) / ts, t1 = static_cast<double>(end_pts) / ts;
  // The output movie keeps the video's own timescale, so the edit list holds the episode's
  // duration exactly (a 1000-tick movie timescale would round it to the millisecond, and a player
  // converting that back would cut or pad the last frame by a few ticks).
  const uint32_t movie_timescale = v->timescale;
  PACKFS_RETURN_IF_ERROR(
      FinishCut(m, &vc, start_pts, static_cast<uint64_t>(end_pts - start_pts)));
  std::vector<TrackCut> cuts;
  for (const auto& t : m.tracks()) {
    if (&t == v) {
      cuts.push_back(vc);
    } else {
      TrackCut c;
      if (CutByTime(m, t, t0, t1, movie_timescale, &c)) cuts.push_back(std::move(c));
    }
  }

  Mp4Slice out;
  out.extents = Layout(&cuts);
  uint64_t payload = 0;
  for (const auto& e : out.extents) payload += e.length;
  size_t mdat_header = payload + 8 > 0xffffffffu ? 16 : 8;
  const std::vector<uint8_t>& ftyp = m.ftyp();
  // The moov's size does not depend on the offsets it holds, only on stco vs co64.
  bool co64 = false;
  uint64_t moov_size = WriteMoov(m, cuts, movie_timescale, 0, false).size();
  if (ftyp.size() + moov_size + mdat_header + payload > 0xffffffffu) {
    co64 = true;
    moov_size = WriteMoov(m, cuts, movie_timescale, 0, true).size();
  }
  uint64_t base = ftyp.size() + moov_size + mdat_header;
  out.head = ftyp;
  std::vector<uint8_t> moov = WriteMoov(m, cuts, movie_timescale, base, co64);
  out.head.insert(out.head.end(), moov.begin(), moov.end());
  BoxWriter w(&out.head);
  if (mdat_header == 16) {
    w.U32(1);
    w.U32(FourCC("mdat"));
    w.U64(payload + 16);
  } else {
    w.U32(static_cast<uint32_t>(payload + 8));
    w.U32(FourCC("mdat"));
  }
  out.video_frames = count;
  out.duration_seconds = t1 - t0;
  return out;
}

}  // namespace packfs
