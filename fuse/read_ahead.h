// A mount as the kernel lists it (its device, from /proc/self/mountinfo), and the kernel's
// read-ahead for a FUSE mount: its backing device (/sys/class/bdi/MAJ:MIN) starts at
// 128 KiB, and INIT can only lower it, so a sequential reader of a large file gets one 128 KiB
// READ per round trip even though the mount takes READs of max_read (1 MiB). Raising the
// device's read_ahead_kb once INIT is done lets the kernel ask for max_read at a time (a 256 MiB
// member: 256 READs instead of 2,048). Random reads are not affected: the kernel grows a
// window only for a sequential stream. Needs root (sysfs); elsewhere the mount keeps 128 KiB.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace packfs {

// The device number ("MAJ:MIN") of the mount at `mountpoint` (absolute, symbolic links resolved),
// from /proc/self/mountinfo (the last mount there); NotFound when nothing is mounted there.
Result<std::string> MountDevice(const std::string& mountpoint,
                                const std::string& mountinfo = "/proc/self/mountinfo");

// Sets the read-ahead of the mount at `mountpoint` to `kib` unless it is that or more already;
// returns the read-ahead in effect afterwards (KiB).
Result<uint32_t> RaiseReadAhead(const std::string& mountpoint, uint32_t kib);

}  // namespace packfs
