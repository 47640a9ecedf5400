// RecentErrors: a bounded, mutex-guarded list of error records and its JSON rendering.
#include "core/base/recent_errors.h"

#include <time.h>

#include <chrono>
#include <ctime>

#include "core/base/json.h"

namespace packfs {

std::string FormatUtcTime(int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm;
  if (::gmtime_r(&t, &tm) == nullptr) return std::to_string(seconds);
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return std::to_string(seconds);
  return buf;
}

void RecentErrors::Add(std::string path, std::string shard, std::string message) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  Add(ErrorRecord{std::chrono::duration_cast<std::chrono::seconds>(now).count(), std::move(path),
                  std::move(shard), std::move(message)});
}

void RecentErrors::Add(ErrorRecord record) {
  if (record.message.size() > kMaxMessage) {
    size_t cut = kMaxMessage - 3;
    // Not inside a UTF-8 sequence (JSON rendering would otherwise mangle the whole message).
    while (cut > 0 && (static_cast<uint8_t>(record.message[cut]) & 0xC0) == 0x80) --cut;
    record.message.resize(cut);
    record.message += "...";
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++total_;
  if (capacity_ == 0) return;
  if (records_.size() == capacity_) records_.pop_front();
  records_.push_back(std::move(record));
}

std::vector<ErrorRecord> RecentErrors::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<ErrorRecord>(records_.begin(), records_.end());
}

uint64_t RecentErrors::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

std::string RecentErrors::ToJson(size_t max_bytes) const {
  const std::vector<ErrorRecord> records = Snapshot();
  // Rendered newest first so that the newest are the ones kept when room runs out.
  std::vector<std::string> items;
  size_t used = 2;  // "[]"
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    std::string item = "{\"time\": " + JsonString(FormatUtcTime(it->time)) +
                       ", \"path\": " + JsonString(it->path) +
                       ", \"shard\": " + JsonString(it->shard) +
                       ", \"message\": " + JsonString(it->message) + "}";
    const size_t need = item.size() + (items.empty() ? 0 : 2);  // ", " between items
    if (used + need > max_bytes) break;
    used += need;
    items.push_back(std::move(item));
  }
  std::string out = "[";
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (it != items.rbegin()) out += ", ";
    out += *it;
  }
  out += "]";
  return out;
}

}  // namespace packfs
