// Test helpers for MP4 slicing: encoding episodes with real ffmpeg, joining them the way LeRobot
// v3 does (concat demuxer, -c copy), frame hashes via framemd5, ffprobe frame counts, and a
// rewrite of stco into co64 for moov-at-end files. Not thread-safe; paths are caller-owned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace packfs::testing {

struct EpisodeSpec {
  std::string video_args;  // e.g. "-c:v libx264 -g 30 -bf 2"
  bool audio = false;      // add an AAC sine track
};

// Encodes one episode of `frames` frames (testsrc2 160x120 at 30 fps, starting `start_frame`
// frames into the pattern so episodes differ) into `out`. Returns false on ffmpeg failure.
bool EncodeEpisode(const std::string& out, int frames, int start_frame, const EpisodeSpec& spec);
// Joins episode files with the concat demuxer and -c copy (`faststart` moves moov first).
bool JoinEpisodes(const std::vector<std::string>& parts, const std::string& out, bool faststart,
                  const std::string& list_path);
// framemd5 hashes (last column) of the decoded video frames, in output order.
std::vector<std::string> FrameHashes(const std::string& path);
// ffprobe -count_frames of the first video stream (-1 on error), and the format duration.
int64_t CountFrames(const std::string& path);
double ProbeDuration(const std::string& path);
// Both from one ffprobe run ({-1, -1} on error): tests that check many files pay one process
// start per file instead of two.
struct FramesAndDuration {
  int64_t frames = -1;
  double duration = -1;
  int64_t duration_ts = -1;  // the video stream's, in its time base
  std::string time_base;     // "1/15360"
};
FramesAndDuration ProbeFramesAndDuration(const std::string& path);
// (pts, duration) of every packet of the first video stream, in presentation order, as ffprobe
// reads them (time base of the stream); empty on error.
std::vector<std::pair<int64_t, int64_t>> ProbeVideoPackets(const std::string& path);
// Rewrites every stco box of a moov-at-end MP4 as co64 (sizes of parents fixed up); mdat offsets
// are unchanged because moov follows mdat. Returns the new file bytes (empty on failure).
std::vector<uint8_t> RewriteStcoAsCo64(const std::vector<uint8_t>& file);
void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace packfs::testing
