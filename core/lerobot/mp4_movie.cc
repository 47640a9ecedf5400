// Parsing of a progressive MP4's moov into Mp4Movie: top-level walk, track boxes and the sample
// tables (stts, ctts, stss, stsz/stz2, stsc, stco/co64, sdtp, elst) expanded to one entry per sample.
// Every count is checked against the bytes of its table before anything is allocated.
#include "core/lerobot/mp4_movie.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace packfs {

class Mp4MovieParser {
 public:
  Mp4MovieParser(const ShardSource& src, Mp4Movie* m) : src_(src), m_(m) {}

  Status Run();

 private:
  Status Fail(const std::string& what) const {
    return Status::Corruption(src_.name() + ": damaged MP4: " + what);
  }
  Status ParseMoov(std::span<const uint8_t> payload);
  Status ParseTrak(std::span<const uint8_t> payload);
  Status ParseEdits(const Box* edts, Mp4Track* t, std::string* skip_reason);
  Status ParseStbl(std::span<const uint8_t> payload, Mp4Track* t);
  // A full box's payload after version/flags.
  Status FullBox(const Box& b, uint8_t* version, BeReader* r) const;

  const ShardSource& src_;
  Mp4Movie* m_;
};

namespace {
// Times beyond 2^48 ticks (over 8,900 years at 1 kHz) are damage; the bound keeps
// dts + cts - shift far from int64 overflow.
constexpr uint64_t kMaxTime = uint64_t{1} << 48;
std::vector<uint8_t> Copy(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }
}  // namespace

Status Mp4MovieParser::FullBox(const Box& b, uint8_t* version, BeReader* r) const {
  *r = BeReader(b.payload);
  *version = r->U8();
  r->U24();
  if (!r->ok()) return Fail("box '" + FourCCText(b.type) + "' is too short");
  return Status::OK();
}

Status Mp4MovieParser::Run() {
  m_->name_ = src_.name();
  m_->source_size_ = src_.size();
  uint64_t pos = 0, end = src_.size();
  bool have_moov = false;
  while (pos < end) {
    if (end - pos < 8) break;  // trailing padding shorter than a box header
    PACKFS_ASSIGN_OR_RETURN(BoxHeader h, ReadBoxHeader(src_, pos, end));
    if (h.type == FourCC("moof") || h.type == FourCC("mvex")) {
      return Status::NotSupported(src_.name() +
                                  ": fragmented MP4 (moof boxes) cannot be sliced; remux it "
                                  "with `ffmpeg -i IN -c copy -movflags faststart OUT.mp4`");
    }
    if (h.type == FourCC("ftyp") && m_->ftyp_.empty()) {
      if (h.size > 4096) return Fail("ftyp box of " + std::to_string(h.size) + " bytes");
      m_->ftyp_.resize(h.size);
      PACKFS_RETURN_IF_ERROR(ReadExactly(src_, pos, m_->ftyp_, "the ftyp box"));
    } else if (h.type == FourCC("moov")) {
      if (have_moov) return Fail("two moov boxes");
      if (h.payload_size() > Mp4Movie::kMaxMoovBytes) {
        return Status::NotSupported(src_.name() + ": moov box of " + std::to_string(h.size) +
                                    " bytes is larger than packfs accepts");
      }
      std::vector<uint8_t> moov(h.payload_size());
      PACKFS_RETURN_IF_ERROR(ReadExactly(src_, h.payload_offset(), moov, "the moov box"));
      PACKFS_RETURN_IF_ERROR(ParseMoov(moov));
      have_moov = true;
    }
    pos += h.size;
  }
  if (!have_moov) {
    return Status::Corruption(src_.name() + ": not a complete MP4 file: no moov box (truncated "
                                            "recording?)");
  }
  return Status::OK();
}

Status Mp4MovieParser::ParseMoov(std::span<const uint8_t> payload) {
  PACKFS_ASSIGN_OR_RETURN(auto kids, ChildBoxes(payload, src_.name(), "moov"));
  if (FindBox(kids, FourCC("mvex"))) {
    return Status::NotSupported(src_.name() + ": fragmented MP4 (mvex in moov) cannot be sliced");
  }
  const Box* mvhd = FindBox(kids, FourCC("mvhd"));
  if (!mvhd) return Fail("moov has no mvhd");
  uint8_t v = 0;
  BeReader r({});
  PACKFS_RETURN_IF_ERROR(FullBox(*mvhd, &v, &r));
  r.Skip(v == 1 ? 16 : 8);
  m_->movie_timescale_ = r.U32();
  r.Skip(v == 1 ? 8 : 4);
  r.Skip(80);  // rate .. next_track_ID: patched by the slicer, so the box must hold them
  if (!r.ok() || m_->movie_timescale_ == 0) return Fail("mvhd is too short or has timescale 0");
  m_->mvhd_ = Copy(mvhd->whole);
  if (const Box* udta = FindBox(kids, FourCC("udta"))) m_->udta_ = Copy(udta->whole);
  for (const auto& b : kids) {
    if (b.type == FourCC("trak")) PACKFS_RETURN_IF_ERROR(ParseTrak(b.payload));
  }
  return Status::OK();
}

Status Mp4MovieParser::ParseTrak(std::span<const uint8_t> payload) {
  PACKFS_ASSIGN_OR_RETURN(auto kids, ChildBoxes(payload, src_.name(), "trak"));
  const Box* tkhd = FindBox(kids, FourCC("tkhd"));
  const Box* mdia = FindBox(kids, FourCC("mdia"));
  if (!tkhd || !mdia) return Fail("a trak without tkhd or mdia");
  Mp4Track t;
  uint8_t v = 0;
  BeReader r({});
  PACKFS_RETURN_IF_ERROR(FullBox(*tkhd, &v, &r));
  r.Skip(v == 1 ? 16 : 8);
  t.track_id = r.U32();
  r.Skip(4);
  r.Skip(v == 1 ? 8 : 4);  // duration: patched by the slicer
  if (!r.ok()) return Fail("tkhd is too short");
  t.tkhd = Copy(tkhd->whole);

  PACKFS_ASSIGN_OR_RETURN(auto mk, ChildBoxes(mdia->payload, src_.name(), "mdia"));
  const Box* mdhd = FindBox(mk, FourCC("mdhd"));
  const Box* hdlr = FindBox(mk, FourCC("hdlr"));
  const Box* minf = FindBox(mk, FourCC("minf"));
  if (!mdhd || !hdlr || !minf) return Fail("an mdia without mdhd, hdlr or minf");
  PACKFS_RETURN_IF_ERROR(FullBox(*mdhd, &v, &r));
  r.Skip(v == 1 ? 16 : 8);
  t.timescale = r.U32();
  r.Skip(v == 1 ? 8 : 4);
  if (!r.ok() || t.timescale == 0) return Fail("mdhd is too short or has timescale 0");
  t.mdhd = Copy(mdhd->whole);
  PACKFS_RETURN_IF_ERROR(FullBox(*hdlr, &v, &r));
  r.Skip(4);
  t.handler = r.U32();
  if (!r.ok()) return Fail("hdlr is too short");
  t.hdlr = Copy(hdlr->whole);
  if (t.handler != FourCC("vide") && t.handler != FourCC("soun")) return Status::OK();  // dropped

  std::string skip;
  PACKFS_RETURN_IF_ERROR(ParseEdits(FindBox(kids, FourCC("edts")), &t, &skip));
  if (!skip.empty()) {
    if (t.handler == FourCC("vide")) {
      return Status::NotSupported(src_.name() + ": video track " + std::to_string(t.track_id) +
                                  " " + skip);
    }
    return Status::OK();  // a secondary track with an edit list we cannot follow: dropped
  }
  PACKFS_ASSIGN_OR_RETURN(auto fk, ChildBoxes(minf->payload, src_.name(), "minf"));
  const Box* stbl = nullptr;
  for (const auto& b : fk) {
    if (b.type == FourCC("stbl")) {
      stbl = &b;
    } else {
      t.minf_other.insert(t.minf_other.end(), b.whole.begin(), b.whole.end());
    }
  }
  if (!stbl) return Fail("minf without stbl");
  PACKFS_RETURN_IF_ERROR(ParseStbl(stbl->payload, &t));
  t.presentation_order.resize(t.samples.size());
  std::iota(t.presentation_order.begin(), t.presentation_order.end(), 0u);
  std::stable_sort(t.presentation_order.begin(), t.presentation_order.end(),
                   [&t](uint32_t a, uint32_t b) {
                     return t.samples[a].dts + t.samples[a].cts < t.samples[b].dts + t.samples[b].cts;
                   });
  m_->tracks_.push_back(std::move(t));
  return Status::OK();
}

Status Mp4MovieParser::ParseEdits(const Box* edts, Mp4Track* t, std::string* skip_reason) {
  if (!edts) return Status::OK();
  PACKFS_ASSIGN_OR_RETURN(auto ek, ChildBoxes(edts->payload, src_.name(), "edts"));
  const Box* elst = FindBox(ek, FourCC("elst"));
  if (!elst) return Status::OK();
  uint8_t v = 0;
  BeReader r({});
  PACKFS_RETURN_IF_ERROR(FullBox(*elst, &v, &r));
  uint32_t n = r.U32();
  uint64_t entry = v == 1 ? 20 : 12;
  if (!r.ok() || n > r.remaining() / entry) return Fail("elst entry count beyond its box");
  uint64_t empty_movie_time = 0;
  bool have_media = false;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t dur = v == 1 ? r.U64() : r.U32();
    int64_t media_time = v == 1 ? static_cast<int64_t>(r.U64())
                                : static_cast<int64_t>(static_cast<int32_t>(r.U32()));
    r.Skip(4);  // media rate
    if (media_time == -1) {
      if (have_media) continue;  // a trailing empty edit presents nothing
      if (dur > kMaxTime) return Fail("elst empty edit is absurdly long");
      empty_movie_time += dur;
      continue;
    }
    if (have_media) {
      *skip_reason = "has an edit list with several media edits, which packfs cannot slice";
      return Status::OK();
    }
    if (media_time < 0 || media_time > static_cast<int64_t>(kMaxTime)) {
      return Fail("elst media_time " + std::to_string(media_time) + " is out of range");
    }
    have_media = true;
    t->presentation_shift = media_time;
  }
  // Leading empty edits delay presentation; express them in media time.
  if (empty_movie_time > 0) {
    if (empty_movie_time > kMaxTime) return Fail("elst empty edits are absurdly long");
    double delay = static_cast<double>(empty_movie_time) * t->timescale / m_->movie_timescale_;
    if (delay > static_cast<double>(kMaxTime)) return Fail("elst empty edits are absurdly long");
    t->presentation_shift -= static_cast<int64_t>(delay);
  }
  return Status::OK();
}

Status Mp4MovieParser::ParseStbl(std::span<const uint8_t> payload, Mp4Track* t) {
  const std::string& nm = src_.name();
  PACKFS_ASSIGN_OR_RETURN(auto kids, ChildBoxes(payload, nm, "stbl"));
  const Box* stsd = FindBox(kids, FourCC("stsd"));
  const Box* stts = FindBox(kids, FourCC("stts"));
  const Box* stsz = FindBox(kids, FourCC("stsz"));
  const Box* stz2 = FindBox(kids, FourCC("stz2"));
  const Box* stsc = FindBox(kids, FourCC("stsc"));
  const Box* stco = FindBox(kids, FourCC("stco"));
  const Box* co64 = FindBox(kids, FourCC("co64"));
  if (!stsd || !stts || !(stsz || stz2) || !stsc || !(stco || co64)) {
    return Fail("track " + std::to_string(t->track_id) + " lacks a required sample table");
  }
  t->stsd = Copy(stsd->whole);
  uint8_t v = 0;
  BeReader r({});

  // Sample sizes decide the sample count every other table is checked against.
  std::vector<Mp4Sample>& s = t->samples;
  if (stsz) {
    PACKFS_RETURN_IF_ERROR(FullBox(*stsz, &v, &r));
    uint32_t fixed = r.U32();
    uint32_t n = r.U32();
    if (!r.ok()) return Fail("stsz is too short");
    if (n > Mp4Movie::kMaxSamplesPerTrack) {
      return Status::NotSupported(nm + ": track " + std::to_string(t->track_id) + " has " +
                                  std::to_string(n) + " samples, more than packfs accepts");
    }
    if (fixed == 0 && n > r.remaining() / 4) {
      return Fail("stsz sample count " + std::to_string(n) + " exceeds its table");
    }
    if (fixed != 0 && n > src_.size() / fixed) return Fail("stsz samples larger than the file");
    s.resize(n);
    for (auto& x : s) x.size = fixed != 0 ? fixed : r.U32();
  } else {
    PACKFS_RETURN_IF_ERROR(FullBox(*stz2, &v, &r));
    r.Skip(3);
    uint8_t bits = r.U8();
    uint32_t n = r.U32();
    if (!r.ok() || (bits != 4 && bits != 8 && bits != 16)) return Fail("bad stz2 header");
    if (n > Mp4Movie::kMaxSamplesPerTrack || (uint64_t{n} * bits + 7) / 8 > r.remaining()) {
      return Fail("stz2 sample count " + std::to_string(n) + " exceeds its table");
    }
    s.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (bits == 16) {
        s[i].size = r.U16();
      } else if (bits == 8) {
        s[i].size = r.U8();
      } else {
        uint8_t byte = r.U8();
        s[i].size = byte >> 4;
        if (++i < n) s[i].size = byte & 15;
      }
    }
  }
  const uint64_t n = s.size();

  // stts: decode times.
  PACKFS_RETURN_IF_ERROR(FullBox(*stts, &v, &r));
  uint32_t entries = r.U32();
  if (!r.ok() || entries > r.remaining() / 8) return Fail("stts entry count exceeds its table");
  uint64_t i = 0;
  int64_t dts = 0;
  for (uint32_t e = 0; e < entries && i < n; ++e) {
    uint32_t count = r.U32(), delta = r.U32();
    for (uint32_t k = 0; k < count && i < n; ++k, ++i) {
      s[i].dts = dts;
      s[i].duration = delta;
      dts += delta;
    }
  }
  if (i != n) return Fail("stts covers fewer samples than stsz");

  if (const Box* ctts = FindBox(kids, FourCC("ctts"))) {
    PACKFS_RETURN_IF_ERROR(FullBox(*ctts, &v, &r));
    entries = r.U32();
    if (!r.ok() || entries > r.remaining() / 8) return Fail("ctts entry count exceeds its table");
    i = 0;
    for (uint32_t e = 0; e < entries && i < n; ++e) {
      uint32_t count = r.U32(), raw = r.U32();
      // Version 0 offsets are unsigned on paper but muxers write negative ones there too.
      auto off = static_cast<int32_t>(raw);
      for (uint32_t k = 0; k < count && i < n; ++k, ++i) s[i].cts = off;
      if (off < 0) t->ctts_negative = true;
    }
    if (i != n) return Fail("ctts covers fewer samples than stsz");
    t->has_ctts = true;
  }

  if (const Box* stss = FindBox(kids, FourCC("stss"))) {
    PACKFS_RETURN_IF_ERROR(FullBox(*stss, &v, &r));
    entries = r.U32();
    if (!r.ok() || entries > r.remaining() / 4) return Fail("stss entry count exceeds its table");
    for (auto& x : s) x.sync = false;
    for (uint32_t e = 0; e < entries; ++e) {
      uint32_t num = r.U32();
      if (num == 0 || num > n) return Fail("stss names sample " + std::to_string(num));
      s[num - 1].sync = true;
    }
    t->has_stss = true;
  }

  if (const Box* sdtp = FindBox(kids, FourCC("sdtp"))) {
    PACKFS_RETURN_IF_ERROR(FullBox(*sdtp, &v, &r));
    if (r.remaining() >= n) {  // otherwise unusable: dropped from the output
      for (auto& x : s) x.sdtp = r.U8();
      t->has_sdtp = true;
    }
  }

  // Chunk offsets, then stsc runs spread the samples over the chunks.
  std::vector<uint64_t> chunks;
  bool wide = co64 != nullptr;
  PACKFS_RETURN_IF_ERROR(FullBox(wide ? *co64 : *stco, &v, &r));
  entries = r.U32();
  if (!r.ok() || entries > r.remaining() / (wide ? 8 : 4)) {
    return Fail("chunk offset count exceeds its table");
  }
  chunks.resize(entries);
  for (auto& c : chunks) c = wide ? r.U64() : r.U32();

  PACKFS_RETURN_IF_ERROR(FullBox(*stsc, &v, &r));
  entries = r.U32();
  if (!r.ok() || entries > r.remaining() / 12) return Fail("stsc entry count exceeds its table");
  struct Run {
    uint32_t first_chunk, per_chunk;
  };
  std::vector<Run> runs(entries);
  for (auto& run : runs) {
    run.first_chunk = r.U32();
    run.per_chunk = r.U32();
    r.U32();  // sample description index: one stsd entry is copied whole, so indexes stay valid
  }
  i = 0;
  for (size_t e = 0; e < runs.size(); ++e) {
    uint64_t first = runs[e].first_chunk;
    uint64_t last = e + 1 < runs.size() ? runs[e + 1].first_chunk : chunks.size() + 1;
    if (first == 0 || last < first || last > chunks.size() + 1) return Fail("stsc chunk numbers");
    for (uint64_t c = first; c < last && i < n; ++c) {
      uint64_t off = chunks[c - 1];
      for (uint32_t k = 0; k < runs[e].per_chunk && i < n; ++k, ++i) {
        if (off > src_.size() || s[i].size > src_.size() - off) {
          return Fail("track " + std::to_string(t->track_id) + " sample " + std::to_string(i + 1) +
                      " lies beyond the end of the file");
        }
        s[i].offset = off;
        off += s[i].size;
      }
    }
  }
  if (i != n) return Fail("stsc/stco place fewer samples than stsz");
  return Status::OK();
}

Result<std::shared_ptr<const Mp4Movie>> Mp4Movie::Parse(const ShardSource& src) {
  auto m = std::make_shared<Mp4Movie>();
  Mp4MovieParser p(src, m.get());
  PACKFS_RETURN_IF_ERROR(p.Run());
  return std::shared_ptr<const Mp4Movie>(std::move(m));
}

const Mp4Track* Mp4Movie::video_track() const {
  for (const auto& t : tracks_) {
    if (t.handler == FourCC("vide")) return &t;
  }
  return nullptr;
}

}  // namespace packfs
