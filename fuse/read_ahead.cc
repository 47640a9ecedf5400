// A FUSE mount's kernel read-ahead, raised through its backing device's sysfs entry; the largest
// reply libfuse can splice.
#include "fuse/read_ahead.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace packfs {
namespace {

// mountinfo escapes space, tab, newline and backslash in paths as \ooo (octal).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      auto [end, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 4, v, 8);
      if (ec == std::errc() && end == s.data() + i + 4) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

Result<std::string> MountDevice(const std::string& mountpoint, const std::string& mountinfo) {
  std::ifstream in(mountinfo);
  if (!in) return Status::IOError(mountinfo + ": " + std::strerror(errno));
  std::string line;
  std::string found;
  while (std::getline(in, line)) {
    // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": field 3 is the device,
    // field 5 the mount point.
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    if (Unescape(point) == mountpoint) found = dev;
  }
  if (found.empty()) return Status::NotFound("nothing is mounted at " + mountpoint);
  return found;
}

Result<uint32_t> RaiseReadAhead(const std::string& device, uint32_t kib) {
  const std::string path = "/sys/class/bdi/" + device + "/read_ahead_kb";
  uint32_t now = 0;
  {
    std::ifstream in(path);
    if (!(in >> now)) return Status::IOError(path + ": cannot read it");
  }
  if (now >= kib) return now;
  std::ofstream out(path);
  out << kib << '\n';
  out.flush();
  if (!out) return Status::IOError(path + ": cannot write it (" + std::strerror(errno) + ")");
  return kib;
}

size_t LargestSplicedRead(size_t max_read) {
  constexpr size_t kSlack = 4 * 4096;  // libfuse wants 3 pages and the 16-byte header beyond it
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 0;
  int got = ::fcntl(fds[0], F_SETPIPE_SZ, static_cast<int>(max_read + kSlack));
  if (got < 0) {
    // What libfuse then grows its pipe to.
    size_t cap = 0;
    std::ifstream("/proc/sys/fs/pipe-max-size") >> cap;
    got = cap > 0 ? ::fcntl(fds[0], F_SETPIPE_SZ, static_cast<int>(cap)) : -1;
  }
  ::close(fds[0]);
  ::close(fds[1]);
  if (got < static_cast<int>(2 * kSlack)) return 0;
  return std::min(static_cast<size_t>(got) - kSlack, max_read);
}

unsigned SplicedMaxRead(unsigned max_read, size_t fits) {
  const size_t pages = std::min<size_t>(fits, max_read) / 4096 * 4096;
  return pages >= (128u << 10) ? static_cast<unsigned>(pages) : max_read;
}

}  // namespace packfs
