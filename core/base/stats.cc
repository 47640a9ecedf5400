// Stats counters and their JSON rendering.
#include "core/base/stats.h"

#include <bit>

namespace packfs {

const char* RequestKindName(RequestKind kind) {
  switch (kind) {
    case RequestKind::kLookup: return "lookup";
    case RequestKind::kGetattr: return "getattr";
    case RequestKind::kOpen: return "open";
    case RequestKind::kOpendir: return "opendir";
    case RequestKind::kReaddir: return "readdir";
    case RequestKind::kReaddirplus: return "readdirplus";
    case RequestKind::kRead: return "read";
    case RequestKind::kStatfs: return "statfs";
    case RequestKind::kGetxattr: return "getxattr";
    case RequestKind::kListxattr: return "listxattr";
    case RequestKind::kMutating: return "refused_read_only";
    case RequestKind::kOther: return "other";
    case RequestKind::kCount: break;
  }
  return "unknown";
}

void Stats::RecordReadLatency(uint64_t micros) {
  size_t bucket = micros == 0 ? 0 : static_cast<size_t>(std::bit_width(micros) - 1);
  if (bucket >= kLatencyBuckets) bucket = kLatencyBuckets - 1;
  latency_[bucket].fetch_add(1, std::memory_order_relaxed);
}

std::string Stats::ToJson(const std::string& extra) const {
  std::string out = "{\n  \"requests\": {";
  for (size_t i = 0; i < requests_.size(); ++i) {
    out += i ? ", " : "";
    out += "\"";
    out += RequestKindName(static_cast<RequestKind>(i));
    out += "\": " + std::to_string(requests_[i].load(std::memory_order_relaxed));
  }
  out += "},\n";
  out += "  \"bytes_served\": " + std::to_string(bytes_served()) + ",\n";
  out += "  \"errors\": " + std::to_string(errors()) + ",\n";
  out += "  \"reads_in_flight\": " +
         std::to_string(reads_in_flight_.load(std::memory_order_relaxed)) + ",\n";
  out += "  \"shards_used\": " + std::to_string(shards_used_.load(std::memory_order_relaxed)) +
         ",\n";
  auto push = [&](PushEvent e) { return std::to_string(push_count(e)); };
  out += "  \"push\": {\"reads\": " + push(PushEvent::kWindow) +
         ", \"files\": " + push(PushEvent::kFile) +
         ", \"bytes\": " + std::to_string(pushed_bytes_.load(std::memory_order_relaxed)) +
         ", \"unknown_inode\": " + push(PushEvent::kUnknownInode) +
         ", \"failed\": " + push(PushEvent::kFailed) +
         ", \"reread\": " + push(PushEvent::kReread) +
         ", \"dropped\": " + push(PushEvent::kDropped) +
         ", \"paused\": " + push(PushEvent::kPaused) +
         ", \"evicted_windows\": " + push(PushEvent::kEvictedWindow) +
         ", \"busy\": " + push(PushEvent::kBusy) +
         ", \"walked_dirs\": " + push(PushEvent::kWalk) +
         ", \"walk_no_room\": " + push(PushEvent::kWalkNoRoom) +
         ", \"listed_dirs\": " + push(PushEvent::kList) +
         ", \"list_no_room\": " + push(PushEvent::kListNoRoom) +
         ", \"list_failed\": " + push(PushEvent::kListFailed) +
         ", \"cut_short\": " + push(PushEvent::kCutShort) + "},\n";
  auto hint = [&](HintEvent e) { return std::to_string(hint_count(e)); };
  out += "  \"hint\": {\"wide\": " + hint(HintEvent::kWide) +
         ", \"resident\": " + hint(HintEvent::kResident) +
         ", \"evicted\": " + hint(HintEvent::kEvicted) +
         ", \"paused\": " + hint(HintEvent::kPaused) +
         ", \"streamed\": " + hint(HintEvent::kStreamed) +
         ", \"read\": " + hint(HintEvent::kRead) + "},\n";
  auto stream = [&](StreamEvent e) { return std::to_string(stream_count(e)); };
  out += "  \"dir_stream\": {\"extents\": " + stream(StreamEvent::kExtent) +
         ", \"bytes\": " + std::to_string(streamed_bytes()) +
         ", \"no_room\": " + stream(StreamEvent::kNoRoom) +
         ", \"stopped\": " + stream(StreamEvent::kStopped) + "},\n";
  out += "  \"read_latency_us\": {";
  for (size_t i = 0; i < latency_.size(); ++i) {
    out += i ? ", " : "";
    out += "\"" + std::to_string(i == 0 ? 0 : (uint64_t{1} << i)) + "\": ";
    out += std::to_string(latency_[i].load(std::memory_order_relaxed));
  }
  out += "}";
  if (!extra.empty()) out += ",\n  " + extra;
  out += "\n}\n";
  return out;
}

}  // namespace packfs
