// MP4 test helpers over real ffmpeg/ffprobe.
#include "tests/support/mp4_util.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/support/test_util.h"

namespace packfs::testing {

bool EncodeEpisode(const std::string& out, int frames, int start_frame, const EpisodeSpec& spec) {
  std::ostringstream cmd;
  double seconds = frames / 30.0;
  cmd << "ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=160x120:rate=30,trim=start_frame="
      << start_frame << ",setpts=PTS-STARTPTS";
  if (spec.audio) {
    cmd << " -f lavfi -i sine=frequency=440:sample_rate=48000:duration=" << seconds;
  }
  cmd << " -frames:v " << frames << " " << spec.video_args << " -pix_fmt yuv420p";
  if (spec.audio) cmd << " -c:a aac";
  cmd << " '" << out << "' 2>&1";
  RunResult r = Sh(cmd.str());
  return r.exit_code == 0;
}

bool JoinEpisodes(const std::vector<std::string>& parts, const std::string& out, bool faststart,
                  const std::string& list_path) {
  std::string list;
  for (const auto& p : parts) list += "file '" + p + "'\n";
  WriteFile(list_path, list);
  RunResult r = Sh("ffmpeg -nostdin -v error -y -f concat -safe 0 -i '" + list_path +
                   "' -c copy " + (faststart ? "-movflags faststart " : "") + "'" + out + "' 2>&1");
  return r.exit_code == 0;
}

std::vector<std::string> FrameHashes(const std::string& path) {
  RunResult r = Run({"ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-f",
                     "framemd5", "-"});
  std::vector<std::string> out;
  if (r.exit_code != 0) return out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto comma = line.rfind(',');
    std::string h = line.substr(comma + 1);
    while (!h.empty() && h.front() == ' ') h.erase(h.begin());
    out.push_back(h);
  }
  return out;
}

int64_t CountFrames(const std::string& path) {
  RunResult r = Run({"ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                     "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path});
  if (r.exit_code != 0) return -1;
  return std::strtoll(r.out.c_str(), nullptr, 10);
}

FramesAndDuration ProbeFramesAndDuration(const std::string& path) {
  RunResult r = Run({"ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                     "-show_entries", "stream=nb_read_frames,duration_ts,time_base:format=duration", "-of",
                     "default=noprint_wrappers=1", path});
  FramesAndDuration fd;
  if (r.exit_code != 0) return fd;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("nb_read_frames=", 0) == 0) fd.frames = std::strtoll(line.c_str() + 15, nullptr, 10);
    if (line.rfind("duration=", 0) == 0) fd.duration = std::strtod(line.c_str() + 9, nullptr);
    if (line.rfind("duration_ts=", 0) == 0) {
      fd.duration_ts = std::strtoll(line.c_str() + 12, nullptr, 10);
    }
    if (line.rfind("time_base=", 0) == 0) fd.time_base = line.substr(10);
  }
  return fd;
}

std::vector<std::pair<int64_t, int64_t>> ProbeVideoPackets(const std::string& path) {
  RunResult r = Run({"ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                     "packet=pts,duration", "-of", "csv=p=0", path});
  std::vector<std::pair<int64_t, int64_t>> out;
  if (r.exit_code != 0) return out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    char* end = nullptr;
    const int64_t pts = std::strtoll(line.c_str(), &end, 10);
    if (end == nullptr || *end != ',') return {};
    out.emplace_back(pts, std::strtoll(end + 1, nullptr, 10));
  }
  std::sort(out.begin(), out.end());
  return out;
}

double ProbeDuration(const std::string& path) {
  RunResult r = Run({"ffprobe", "-v", "error", "-show_entries", "format=duration", "-of",
                     "csv=p=0", path});
  return r.exit_code == 0 ? std::strtod(r.out.c_str(), nullptr) : -1;
}

namespace {

uint64_t Get(const std::vector<uint8_t>& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | b[at + static_cast<size_t>(i)];
  return v;
}
void Put(std::vector<uint8_t>* out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// Rewrites the boxes in b[from, to) into out; false on a malformed box.
bool Rewrite(const std::vector<uint8_t>& b, size_t from, size_t to, std::vector<uint8_t>* out) {
  static const std::string kContainers[] = {"moov", "trak", "mdia", "minf", "stbl"};
  size_t pos = from;
  while (pos + 8 <= to) {
    size_t size = Get(b, pos, 4);
    std::string type(b.begin() + static_cast<long>(pos) + 4, b.begin() + static_cast<long>(pos) + 8);
    if (size < 8 || size > to - pos) return false;
    bool container = false;
    for (const auto& c : kContainers) container = container || c == type;
    if (container) {
      std::vector<uint8_t> inner;
      if (!Rewrite(b, pos + 8, pos + size, &inner)) return false;
      Put(out, inner.size() + 8, 4);
      out->insert(out->end(), type.begin(), type.end());
      out->insert(out->end(), inner.begin(), inner.end());
    } else if (type == "stco") {
      uint64_t n = Get(b, pos + 12, 4);
      Put(out, 16 + 8 * n, 4);
      out->insert(out->end(), {'c', 'o', '6', '4'});
      Put(out, 0, 4);
      Put(out, n, 4);
      for (uint64_t i = 0; i < n; ++i) Put(out, Get(b, pos + 16 + 4 * i, 4), 8);
    } else {
      out->insert(out->end(), b.begin() + static_cast<long>(pos),
                  b.begin() + static_cast<long>(pos + size));
    }
    pos += size;
  }
  return pos == to;
}

}  // namespace

std::vector<uint8_t> RewriteStcoAsCo64(const std::vector<uint8_t>& file) {
  std::vector<uint8_t> out;
  if (!Rewrite(file, 0, file.size(), &out)) return {};
  return out;
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace packfs::testing
