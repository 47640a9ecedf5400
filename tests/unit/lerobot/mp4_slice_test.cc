// Tests of MP4 slicing against real ffmpeg/ffprobe: episodes encoded one by one (H.264 with
// B-frames, AV1), joined with the concat demuxer like LeRobot v3; every episode sliced back out
// must decode to the same frame hashes as its own encode. Also off-keyframe starts, moov at end,
// audio, co64, the slice source's reads, and malformed files.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/lerobot/mp4_movie.h"
#include "core/lerobot/mp4_slice.h"
#include "core/lerobot/mp4_slice_source.h"
#include "tests/support/mp4_util.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

using testing::TempDir;

constexpr char kH264[] = "-c:v libx264 -g 30 -bf 2";
constexpr char kAv1[] = "-c:v libsvtav1 -g 2";

std::shared_ptr<const Mp4Movie> ParseOk(const std::string& path) {
  auto src = FileShardSource::Open(path, path);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  if (!src.ok()) return nullptr;
  auto m = Mp4Movie::Parse(**src);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : nullptr;
}

// Writes head + extents of `slice` over `source_path` to `out`.
void WriteSlice(const Mp4Slice& slice, const std::string& source_path, const std::string& out) {
  std::vector<uint8_t> src = testing::ReadBytes(source_path);
  std::vector<uint8_t> bytes = slice.head;
  for (const auto& e : slice.extents) {
    ASSERT_LE(e.source_offset + e.length, src.size());
    bytes.insert(bytes.end(), src.begin() + static_cast<long>(e.source_offset),
                 src.begin() + static_cast<long>(e.source_offset + e.length));
  }
  testing::WriteBytes(out, bytes);
}

struct Joined {
  std::string path;
  std::vector<std::string> episodes;  // each episode's own encode
  std::vector<int> lengths;
};

Joined MakeJoined(const TempDir& tmp, const std::string& args, bool faststart, bool audio,
                  std::vector<int> lengths = {37, 41, 29}) {
  Joined j;
  j.lengths = lengths;
  int start = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::string ep = tmp / ("ep" + std::to_string(i) + ".mp4");
    EXPECT_TRUE(testing::EncodeEpisode(ep, lengths[i], start, {args, audio})) << ep;
    j.episodes.push_back(ep);
    start += lengths[i] + 7;
  }
  j.path = tmp / "joined.mp4";
  EXPECT_TRUE(testing::JoinEpisodes(j.episodes, j.path, faststart, tmp / "list.txt"));
  return j;
}

// Presentation time of the first video frame: concat shifts video by the audio's priming.
double FirstVideoSeconds(const Mp4Movie& m) {
  const Mp4Track* v = m.video_track();
  int64_t first = INT64_MAX;
  for (const auto& s : v->samples) first = std::min(first, v->PresentationTime(s));
  return static_cast<double>(first) / v->timescale;
}

// Slices every episode by (from = frames so far / fps, frame_count = length) and checks it.
void CheckEpisodes(const TempDir& tmp, const Joined& j, const std::string& source) {
  auto movie = ParseOk(source);
  ASSERT_TRUE(movie);
  int before = 0;
  double origin = FirstVideoSeconds(*movie);
  const auto packets = testing::ProbeVideoPackets(source);
  const testing::FramesAndDuration source_fd = testing::ProbeFramesAndDuration(source);
  for (size_t i = 0; i < j.lengths.size(); ++i) {
    SCOPED_TRACE("episode " + std::to_string(i));
    Mp4SliceRequest req;
    req.from_seconds = origin + before / 30.0;
    req.frame_count = static_cast<uint64_t>(j.lengths[i]);
    auto slice = SliceMp4(*movie, req);
    ASSERT_TRUE(slice.ok()) << slice.status().ToString();
    EXPECT_EQ(slice->video_frames, req.frame_count);
    EXPECT_NEAR(slice->duration_seconds, j.lengths[i] / 30.0, 0.5 / 30);
    std::string out = tmp / ("slice" + std::to_string(i) + ".mp4");
    WriteSlice(*slice, source, out);
    EXPECT_EQ(testing::FrameHashes(out), testing::FrameHashes(j.episodes[i]));
    const testing::FramesAndDuration fd = testing::ProbeFramesAndDuration(out);
    EXPECT_EQ(fd.frames, j.lengths[i]);
    EXPECT_NEAR(fd.duration, j.lengths[i] / 30.0, 1.5 / 30);
    // The edit list is exact in the source's own timescale: ffprobe gives the slice the stream
    // duration that the episode's frames span in the source, tick for tick (not the episode's
    // own encode: concat stretches an episode's last frame a little in AV1, 522 ticks for 512).
    ASSERT_GE(packets.size(), static_cast<size_t>(before + j.lengths[i]));
    const auto& first = packets[static_cast<size_t>(before)];
    const auto& last = packets[static_cast<size_t>(before + j.lengths[i] - 1)];
    EXPECT_EQ(fd.time_base, source_fd.time_base);
    EXPECT_EQ(fd.duration_ts, last.first + last.second - first.first);
    before += j.lengths[i];
  }
}

TEST(Mp4Slice, H264FaststartEpisodesMatchTheirOwnEncodes) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kH264, true, false);
  CheckEpisodes(tmp, j, j.path);
}

TEST(Mp4Slice, Av1EpisodesMatchTheirOwnEncodes) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kAv1, true, false);
  CheckEpisodes(tmp, j, j.path);
}

TEST(Mp4Slice, MoovAtEnd) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kH264, false, false);
  CheckEpisodes(tmp, j, j.path);
}

TEST(Mp4Slice, Co64ChunkOffsets) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kH264, false, false);
  std::vector<uint8_t> co64 = testing::RewriteStcoAsCo64(testing::ReadBytes(j.path));
  ASSERT_FALSE(co64.empty());
  std::string path = tmp / "co64.mp4";
  testing::WriteBytes(path, co64);
  ASSERT_EQ(testing::FrameHashes(path), testing::FrameHashes(j.path));  // the rewrite is sound
  CheckEpisodes(tmp, j, path);
}

TEST(Mp4Slice, WithAudioTrack) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kH264, true, true);
  CheckEpisodes(tmp, j, j.path);
  auto movie = ParseOk(j.path);
  ASSERT_TRUE(movie);
  ASSERT_EQ(movie->tracks().size(), 2u);
  EXPECT_NEAR(FirstVideoSeconds(*movie), 1024 / 48000.0, 0.002);  // as ffprobe shows it
  Mp4SliceRequest req;
  req.from_seconds = FirstVideoSeconds(*movie) + 37 / 30.0;
  req.frame_count = 41;
  auto slice = SliceMp4(*movie, req);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  std::string out = tmp / "av.mp4";
  WriteSlice(*slice, j.path, out);
  auto probe = testing::Run({"ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of",
                             "csv=p=0", out});
  EXPECT_EQ(probe.out, "video\naudio\n");
  auto decode = testing::Run({"ffmpeg", "-nostdin", "-v", "error", "-i", out, "-f", "null", "-"});
  EXPECT_EQ(decode.exit_code, 0) << decode.err;
  EXPECT_EQ(decode.err, "");
}

TEST(Mp4Slice, ContiguousEpisodeIsOneExtent) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kH264, true, false);
  auto movie = ParseOk(j.path);
  ASSERT_TRUE(movie);
  Mp4SliceRequest req;
  req.from_seconds = 37 / 30.0;
  req.frame_count = 41;
  auto slice = SliceMp4(*movie, req);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_EQ(slice->extents.size(), 1u);
  // The to_seconds form (a frame short, as real datasets round) selects by time instead.
  req.frame_count = 0;
  req.to_seconds = (37 + 41) / 30.0 - 0.001;
  auto by_time = SliceMp4(*movie, req);
  ASSERT_TRUE(by_time.ok()) << by_time.status().ToString();
  EXPECT_EQ(by_time->video_frames, 41u);
}

TEST(Mp4Slice, StartOffKeyframeShowsTheRightFrames) {
  TempDir tmp;
  std::string ep = tmp / "long.mp4";
  ASSERT_TRUE(testing::EncodeEpisode(ep, 75, 0, {kH264, false}));
  auto full = testing::FrameHashes(ep);
  ASSERT_EQ(full.size(), 75u);
  auto movie = ParseOk(ep);
  ASSERT_TRUE(movie);
  for (auto [from, count] : {std::pair{10, 15}, std::pair{31, 30}, std::pair{59, 16}}) {
    SCOPED_TRACE("from frame " + std::to_string(from));
    Mp4SliceRequest req;
    req.from_seconds = from / 30.0;
    req.frame_count = static_cast<uint64_t>(count);
    auto slice = SliceMp4(*movie, req);
    ASSERT_TRUE(slice.ok()) << slice.status().ToString();
    std::string out = tmp / "cut.mp4";
    WriteSlice(*slice, ep, out);
    std::vector<std::string> want(full.begin() + from, full.begin() + from + count);
    EXPECT_EQ(testing::FrameHashes(out), want);
    EXPECT_EQ(testing::CountFrames(out), count);
  }
}

TEST(Mp4Slice, BadRequests) {
  TempDir tmp;
  std::string ep = tmp / "e.mp4";
  ASSERT_TRUE(testing::EncodeEpisode(ep, 30, 0, {kH264, false}));
  auto movie = ParseOk(ep);
  ASSERT_TRUE(movie);
  Mp4SliceRequest req;
  req.from_seconds = 0.5 / 30;  // between frames 0 and 1 is still "nearest" (within half a frame)
  req.frame_count = 31;
  auto r = SliceMp4(*movie, req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find(ep), std::string::npos);
  req.from_seconds = 5;
  req.frame_count = 1;
  EXPECT_EQ(SliceMp4(*movie, req).status().code(), Code::kInvalidArgument);
}

TEST(Mp4SliceSource, RandomReadsEqualTheWrittenSlice) {
  TempDir tmp;
  Joined j = MakeJoined(tmp, kH264, true, true);
  auto movie = ParseOk(j.path);
  ASSERT_TRUE(movie);
  Mp4SliceRequest req;
  req.from_seconds = FirstVideoSeconds(*movie) + 37 / 30.0;
  req.frame_count = 41;
  auto slice = SliceMp4(*movie, req);
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  std::string out = tmp / "s.mp4";
  WriteSlice(*slice, j.path, out);
  std::vector<uint8_t> want = testing::ReadBytes(out);
  auto base = FileShardSource::Open(j.path, "media/joined.mp4");
  ASSERT_TRUE(base.ok());
  Mp4SliceSource src("episode_1.mp4", std::shared_ptr<const ShardSource>(std::move(*base)),
                     *slice);
  ASSERT_EQ(src.size(), want.size());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    uint64_t off = rng() % (want.size() + 10);
    size_t len = rng() % 9000;
    std::vector<uint8_t> buf(len);
    auto n = src.ReadAt(off, buf);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    size_t expect = off >= want.size() ? 0 : std::min<size_t>(len, want.size() - off);
    ASSERT_EQ(*n, expect);
    ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + static_cast<long>(expect),
                           want.begin() + static_cast<long>(std::min<uint64_t>(off, want.size()))));
  }
}

// --- malformed input ----------------------------------------------------------------------------

Status ParseBytes(std::vector<uint8_t> bytes) {
  MemoryShardSource src("media/bad.mp4", std::move(bytes));
  return Mp4Movie::Parse(src).status();
}

// Offset of the first box of `type` (a naive scan is fine for these small files).
size_t Find(const std::vector<uint8_t>& b, const char* type) {
  for (size_t i = 4; i + 4 <= b.size(); ++i) {
    if (std::equal(type, type + 4, b.begin() + static_cast<long>(i))) return i - 4;
  }
  return std::string::npos;
}
void Put32(std::vector<uint8_t>* b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*b)[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

TEST(Mp4Malformed, ClearErrors) {
  TempDir tmp;
  std::string ep = tmp / "e.mp4";
  ASSERT_TRUE(testing::EncodeEpisode(ep, 20, 0, {kH264, false}));
  std::vector<uint8_t> good = testing::ReadBytes(ep);
  ASSERT_TRUE(ParseBytes(good).ok());
  std::string moov_at_end = tmp / "end.mp4";
  ASSERT_TRUE(testing::JoinEpisodes({ep}, moov_at_end, false, tmp / "l.txt"));
  std::vector<uint8_t> end = testing::ReadBytes(moov_at_end);

  {  // truncated moov (moov at the end, file cut inside it)
    std::vector<uint8_t> b(end.begin(), end.end() - 100);
    Status st = ParseBytes(b);
    EXPECT_EQ(st.code(), Code::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find("media/bad.mp4"), std::string::npos) << st.ToString();
  }
  {  // a box larger than the file
    std::vector<uint8_t> b = good;
    Put32(&b, Find(b, "mdat"), 0x7fffffff);
    Status st = ParseBytes(b);
    EXPECT_EQ(st.code(), Code::kCorruption) << st.ToString();
  }
  {  // stsz count larger than its table
    std::vector<uint8_t> b = good;
    Put32(&b, Find(b, "stsz") + 16, 1000000);
    Status st = ParseBytes(b);
    EXPECT_EQ(st.code(), Code::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find("stsz"), std::string::npos) << st.ToString();
  }
  {  // stco pointing outside the file
    std::vector<uint8_t> b = good;
    Put32(&b, Find(b, "stco") + 16, 0x7ffffff0);
    EXPECT_EQ(ParseBytes(b).code(), Code::kCorruption);
  }
  {  // fragmented
    std::string frag = tmp / "frag.mp4";
    ASSERT_EQ(testing::Sh("ffmpeg -nostdin -v error -i '" + ep + "' -c copy -movflags "
                          "frag_keyframe+empty_moov '" + frag + "'").exit_code, 0);
    Status st = ParseBytes(testing::ReadBytes(frag));
    EXPECT_EQ(st.code(), Code::kNotSupported) << st.ToString();
    EXPECT_NE(st.message().find("fragmented"), std::string::npos);
  }
  {  // no moov at all
    std::vector<uint8_t> b(good.begin(), good.begin() + 32);
    EXPECT_EQ(ParseBytes(b).code(), Code::kCorruption);
  }
}

}  // namespace
}  // namespace packfs
