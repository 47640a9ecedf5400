// Fuzz target: a Parquet file's bytes through the reader — footer (Thrift compact protocol),
// schema tree, every column read with each typed reader (v1 and v2 pages, the five codecs,
// RLE/bit-packed levels, dictionaries, DELTA_* and BYTE_STREAM_SPLIT values, lists), and the
// LeRobot episodes reader. Nothing may crash, hang, read out of bounds or
// allocate beyond the (lowered) limits; flat columns must have one entry per row.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/base/shard_source.h"
#include "core/lerobot/lerobot_meta.h"
#include "core/lerobot/parquet_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  packfs::MemoryShardSource src("fuzz.parquet", std::vector<uint8_t>(data, data + size));
  packfs::ParquetOptions opts;
  opts.max_column_values = 1 << 20;
  opts.max_column_bytes = 16 << 20;
  opts.max_page_bytes = 16 << 20;
  auto f = packfs::ParquetFile::Open(src, opts);
  if (f.ok()) {
    for (const auto& path : f->column_paths()) {
      auto i = f->ReadInt64(path);
      if (i.ok() && i->size() != f->num_rows()) std::abort();
      auto d = f->ReadDouble(path);
      if (d.ok() && d->size() != f->num_rows()) std::abort();
      auto s = f->ReadString(path);
      if (s.ok() && s->size() != f->num_rows()) std::abort();
      auto dot = path.find('.');
      if (dot != std::string::npos) {
        // The list group: up to the first dot ("tasks") or before ".list.element" (a name with
        // dots, "observation.state").
        for (const std::string& list :
             {path.substr(0, dot), path.substr(0, path.rfind(".list.element"))}) {
          auto l = f->ReadStringList(list);
          if (l.ok() && l->size() != f->num_rows()) std::abort();
          auto li = f->ReadInt64List(list);
          if (li.ok() && li->size() != f->num_rows()) std::abort();
          auto ld = f->ReadDoubleList(list);
          if (ld.ok() && ld->size() != f->num_rows()) std::abort();
        }
      }
    }
  }
  packfs::LeRobotInfo info;
  info.codebase_version = "v3.0";
  info.fps = 30;
  info.chunks_size = 1000;
  info.video_path = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";
  info.video_keys = {"observation.images.front", "observation.images.top"};
  auto eps = packfs::ReadLeRobotEpisodes({&src}, info);
  if (eps.ok()) {
    for (const auto& e : *eps) {
      if (e.videos.size() != info.video_keys.size()) std::abort();
      (void)packfs::LeRobotEpisodeJsonLine(e);
      for (const auto& v : e.videos) {
        if (!packfs::LeRobotVideoPath(info, v).ok()) std::abort();
      }
    }
  }
  return 0;
}
