// Helpers shared by the packing subcommands (see pack_cli.h).
#include "mkpack/pack_cli.h"

#include <cstdio>
#include <map>

namespace packfs::mkpack {

// "4294967296", "4G", "512MiB", "1.5G" (binary units).
Result<uint64_t> ParseBytes(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    return Status::InvalidArgument("not a byte count: '" + s + "'");
  }
  std::string unit = s.substr(used);
  static const std::map<std::string, double> kUnits = {
      {"", 1}, {"B", 1}, {"K", 1024.0}, {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0},
      {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"T", 1099511627776.0},
      {"TiB", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end() || v <= 0) {
    return Status::InvalidArgument("not a byte count: '" + s + "' (e.g. 4294967296, 4G, 512MiB)");
  }
  return static_cast<uint64_t>(v * it->second);
}

std::string Human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

ProgressBar::ProgressBar(uint64_t files, uint64_t bytes)
    : files_(files), bytes_(bytes), start_(Clock::now()) {}

void ProgressBar::Update(const WriteProgress& p, bool force) {
  auto now = Clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  double rate = secs > 0 ? p.bytes / secs : 0;
  double frac = bytes_ > 0 ? static_cast<double>(p.bytes) / bytes_
                           : (files_ > 0 ? static_cast<double>(p.files) / files_ : 1);
  int filled = static_cast<int>(frac * 24);
  std::string bar(filled, '#');
  bar.resize(24, '.');
  double eta = rate > 0 ? (bytes_ - p.bytes) / rate : 0;
  std::fprintf(stderr, "\r[%s] %llu/%llu files  %s/%s  %s/s  ETA %.0fs   ", bar.c_str(),
               static_cast<unsigned long long>(p.files), static_cast<unsigned long long>(files_),
               Human(p.bytes).c_str(), Human(bytes_).c_str(), Human(rate).c_str(), eta);
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (drawn_) std::fprintf(stderr, "\r%*s\r", 100, "");
}

}  // namespace packfs::mkpack
