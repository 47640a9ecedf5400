// Helpers shared by the packing subcommands (`mkpack pack`, `convert-wds`, `convert-lerobot`):
// reader threads, byte-count options, binary-unit sizes, and the terminal progress bar. Not thread-safe; one bar per command.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/byte_size.h"
#include "core/pack_writer.h"
#include "core/status.h"

namespace packfs::mkpack {

// Default reader threads of the packing subcommands (`--jobs 0`). Cold small-file reads are
// latency bound and the virtio SSD serves many requests at once: on 100k files of 4-32 KiB, 8
// readers cut the cold pack from 55.6 s (1 reader) to 20.4 s; the readers mostly sleep in I/O,
// so more threads than cores is right.
constexpr int kAutoJobs = 8;
inline int JobsOrAuto(int jobs) { return jobs > 0 ? jobs : kAutoJobs; }

// "1.5 GiB" (binary units).
std::string Human(double bytes);

// Terminal progress on stderr: files, bytes, rate, ETA; redrawn at most 10 times a second.
class ProgressBar {
 public:
  ProgressBar(uint64_t files, uint64_t bytes);
  void Update(const WriteProgress& p, bool force = false);
  void Clear();

 private:
  using Clock = std::chrono::steady_clock;
  uint64_t files_, bytes_;
  Clock::time_point start_, last_{};
  bool drawn_ = false;
};

}  // namespace packfs::mkpack
