// Slicing a progressive MP4 without re-encoding: SliceMp4 picks the samples that present a frame
// range of the video track (plus the same time range of other audio/video tracks) and writes a new
// ftyp + moov + mdat header whose sample tables point into a list of byte extents of the source.
// Serving `head` followed by the extents' bytes is a complete MP4 (see Mp4SliceSource).
// Pure functions over an immutable Mp4Movie: thread-safe.
//
// Boxes: stts, ctts (version 0, or 1 when offsets are negative), stss, sdtp, stsz (stz2 is
// rewritten as stsz), stsc, stco/co64, elst and the durations in mvhd/tkhd/mdhd are rewritten for
// the range; ftyp, stsd, hdlr, vmhd/smhd/dinf and moov/udta are copied; sgpd/sbgp, subs, saiz/saio,
// tref, iods, meta, track udta and tracks other than video/audio are dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/lerobot/mp4_movie.h"

namespace packfs {

struct Mp4Extent {
  uint64_t source_offset = 0;
  uint64_t length = 0;
};

struct Mp4Slice {
  std::vector<uint8_t> head;       // ftyp + moov + mdat box header (mdat payload = the extents)
  std::vector<Mp4Extent> extents;  // byte ranges of the source file, in the order they follow head
  uint64_t video_frames = 0;       // samples presented on the video track
  double duration_seconds = 0;
  uint64_t size() const;  // head.size() + sum of extent lengths
};

struct Mp4SliceRequest {
  double from_seconds = 0;   // presentation time in the source of the first frame to show
  uint64_t frame_count = 0;  // video frames to show (the authoritative length); 0 = use to_seconds
  double to_seconds = 0;     // end (exclusive) when frame_count is 0
};

// Byte ranges of the source closer than this are joined into one extent (the gap bytes become
// unused mdat payload): reading a few KiB of another track's interleaved audio costs less than
// an extra extent split in every read.
constexpr uint64_t kMp4ExtentMergeGap = 64 * 1024;

// The first frame shown is the video sample whose presentation time is nearest `from_seconds`
// (within half a frame, else InvalidArgument); exactly `frame_count` frames follow in
// presentation order (InvalidArgument if the file has fewer). Decoding starts at the previous
// sync sample; an edit list hides the pre-roll, so output presentation starts at 0.
Result<Mp4Slice> SliceMp4(const Mp4Movie& movie, const Mp4SliceRequest& req);

}  // namespace packfs
