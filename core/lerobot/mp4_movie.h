// Mp4Movie: the parsed `moov` of one progressive (non-fragmented) MP4 file — its tracks with every
// sample expanded (file offset, size, decode time, composition offset, sync flag), plus the raw
// boxes the slicer copies into a new moov. Parsed once per source file; immutable afterwards and
// safe to share between threads. Holds no reference to the source it was parsed from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/base/status.h"
#include "core/lerobot/mp4_box.h"

namespace packfs {

struct Mp4Sample {
  uint64_t offset = 0;   // in the source file
  uint32_t size = 0;
  uint32_t duration = 0;  // stts delta (media timescale)
  int64_t dts = 0;        // decode time (media timescale), first sample at 0
  int32_t cts = 0;        // composition offset (ctts), may be negative (ctts version 1)
  bool sync = true;
  uint8_t sdtp = 0;       // the sample's sdtp byte when the track has one
};

struct Mp4Track {
  uint32_t track_id = 0;
  uint32_t handler = 0;  // 'vide', 'soun', ...
  uint32_t timescale = 0;
  // Presentation time of a sample (media timescale) = dts + cts - presentation_shift, from the
  // track's edit list: media_time of its one media edit, minus leading empty edits.
  int64_t presentation_shift = 0;
  std::vector<Mp4Sample> samples;  // decode order
  // Sample indexes in presentation order (stable for equal times), computed once at parse so
  // slicing the thousand episodes of one file does not sort its samples a thousand times.
  std::vector<uint32_t> presentation_order;
  bool has_ctts = false;
  bool ctts_negative = false;  // some composition offset is negative (needs ctts version 1)
  bool has_stss = false;
  bool has_sdtp = false;
  // Raw boxes (header included) copied into sliced output.
  std::vector<uint8_t> tkhd, mdhd, hdlr, stsd;
  std::vector<uint8_t> minf_other;  // minf children other than stbl (vmhd/smhd, dinf), concatenated

  int64_t PresentationTime(const Mp4Sample& s) const { return s.dts + s.cts - presentation_shift; }
};

class Mp4Movie {
 public:
  // Reads box headers from the top level and the whole moov (moov before or after mdat; 64-bit
  // box sizes; size 0 = to end of file). Malformed boxes → Corruption, fragmented files and
  // unsupported layouts → NotSupported; messages name src.name().
  static Result<std::shared_ptr<const Mp4Movie>> Parse(const ShardSource& src);

  const std::string& name() const { return name_; }
  uint64_t source_size() const { return source_size_; }
  uint32_t movie_timescale() const { return movie_timescale_; }
  const std::vector<uint8_t>& ftyp() const { return ftyp_; }  // raw, may be empty
  const std::vector<uint8_t>& mvhd() const { return mvhd_; }  // raw
  const std::vector<uint8_t>& udta() const { return udta_; }  // raw moov/udta, may be empty
  const std::vector<Mp4Track>& tracks() const { return tracks_; }
  // The first video track, or nullptr.
  const Mp4Track* video_track() const;

  // Upper bound on samples per track: keeps a hostile or absurd table from allocating gigabytes
  // (32 bytes per sample; 2^24 samples = 512 MiB, 6 days of 30 fps video).
  static constexpr uint64_t kMaxSamplesPerTrack = uint64_t{1} << 24;
  // Upper bound on the moov size read into memory.
  static constexpr uint64_t kMaxMoovBytes = uint64_t{256} << 20;

 private:
  std::string name_;
  uint64_t source_size_ = 0;
  uint32_t movie_timescale_ = 0;
  std::vector<uint8_t> ftyp_, mvhd_, udta_;
  std::vector<Mp4Track> tracks_;

  friend class Mp4MovieParser;
};

}  // namespace packfs
