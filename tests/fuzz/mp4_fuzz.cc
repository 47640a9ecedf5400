// Fuzz target: an MP4 file's bytes through Mp4Movie::Parse and, when it parses, SliceMp4 for a few
// ranges and a full read of every slice through Mp4SliceSource. Nothing may crash, hang, allocate
// without bound or read out of bounds; every extent of a slice must lie inside the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/lerobot/mp4_movie.h"
#include "core/lerobot/mp4_slice.h"
#include "core/lerobot/mp4_slice_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto base = std::make_shared<packfs::MemoryShardSource>("fuzz.mp4",
                                                          std::vector<uint8_t>(data, data + size));
  auto movie = packfs::Mp4Movie::Parse(*base);
  if (!movie.ok()) return 0;
  const packfs::Mp4Track* v = (*movie)->video_track();
  if (!v || v->samples.empty()) return 0;
  double fps_guess = v->samples[0].duration > 0
                         ? static_cast<double>(v->timescale) / v->samples[0].duration
                         : 30.0;
  for (uint64_t first : {uint64_t{0}, uint64_t{3}}) {
    packfs::Mp4SliceRequest req;
    req.from_seconds = static_cast<double>(first) / fps_guess;
    req.frame_count = first + 2;
    auto slice = packfs::SliceMp4(**movie, req);
    if (!slice.ok()) continue;
    for (const auto& e : slice->extents) {
      if (e.source_offset > size || e.length > size - e.source_offset) std::abort();
    }
    packfs::Mp4SliceSource src("slice.mp4", base, *slice);
    std::vector<uint8_t> buf(4096);
    for (uint64_t off = 0; off < src.size(); off += buf.size()) {
      auto n = src.ReadAt(off, buf);
      if (!n.ok()) std::abort();  // extents are inside the file, so reads cannot fail
    }
    // A slice must itself parse.
    packfs::MemoryShardSource head("head.mp4", slice->head);
    (void)packfs::Mp4Movie::Parse(head);
  }
  return 0;
}
