// A mount as the kernel lists it (its device, from /proc/self/mountinfo), and the kernel's
// read-ahead for a FUSE mount: its backing device (/sys/class/bdi/MAJ:MIN) starts at
// 128 KiB, and INIT can only lower it, so a sequential reader of a large file gets one 128 KiB
// READ per round trip even though the mount takes READs of max_read (1 MiB). Raising the
// device's read_ahead_kb once INIT is done lets the kernel ask for more at a time (512 KiB, the
// mount's default: a 256 MiB member in 512 READs instead of 2,048). Random reads are not
// affected: the kernel grows a window only for a sequential stream. Needs root (sysfs);
// elsewhere the mount keeps 128 KiB.
// Also: how large a READ's reply libfuse can splice, for the reads that READs of max_read bring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace packfs {

// The device number ("MAJ:MIN") of the mount at `mountpoint` (absolute, symbolic links resolved),
// from /proc/self/mountinfo (the last mount there); NotFound when nothing is mounted there.
Result<std::string> MountDevice(const std::string& mountpoint,
                                const std::string& mountinfo = "/proc/self/mountinfo");

// Sets the read-ahead of the mount whose device is `device` ("MAJ:MIN", as MountDevice gives it)
// to `kib` unless it is that or more already; returns the read-ahead in effect afterwards (KiB).
Result<uint32_t> RaiseReadAhead(const std::string& device, uint32_t kib);

// The largest READ reply (at most `max_read`) that libfuse can splice. It splices a reply only
// through a pipe that holds all of it (header and a few pages of slack included) and otherwise
// falls back, for every such reply, to malloc + pread + writev + free: a fresh allocation of the
// reply's size, faulted in page by page and kept by malloc afterwards. A pipe grows past
// /proc/sys/fs/pipe-max-size (1 MiB) only with CAP_SYS_RESOURCE, so without it a 1 MiB READ
// never splices; the mount copies such reads through its pooled buffers instead (a 256 MiB
// member in a cached shard with -o nocrc, all its READs zero-copy: 1.0-1.1 GB/s through
// libfuse's fallback, 1.3-1.8 through the pool). 0 when no pipe can be made.
size_t LargestSplicedRead(size_t max_read);

// `max_read`, or less where a pipe cannot hold a reply that large (`fits`, from
// LargestSplicedRead(max_read)): the whole pages one can (1008 KiB for 1 MiB where pipes stop at
// 1 MiB), but not under 128 KiB.
unsigned SplicedMaxRead(unsigned max_read, size_t fits);

}  // namespace packfs
