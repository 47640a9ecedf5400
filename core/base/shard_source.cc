// Local-file and in-memory ShardSource implementations.
#include "core/base/shard_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/wait_notice.h"

namespace packfs {

Result<std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>> ShardSource::MapToFile(
    uint64_t, uint64_t) const {
  return std::optional<std::pair<std::shared_ptr<const ShardSource>, uint64_t>>();
}

Status ReadExactly(const ShardSource& src, uint64_t offset, std::span<uint8_t> buf,
                   const char* what) {
  if (offset > src.size() || buf.size() > src.size() - offset) {
    return Status::Corruption(src.name() + ": truncated: the file ends at byte " +
                              std::to_string(src.size()) + " but " + what + " needs bytes up to " +
                              std::to_string(offset + buf.size()));
  }
  PACKFS_ASSIGN_OR_RETURN(size_t n, src.ReadAt(offset, buf));
  if (n != buf.size()) {
    return Status::Corruption(src.name() + ": short read of " + what + " at offset " +
                              std::to_string(offset) + " (file shrank while open?)");
  }
  return Status::OK();
}

Result<FileStat> StatFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    return Status::IOError("cannot stat " + path + ": " + ErrnoText(e), e);
  }
  FileStat fs;
  fs.size = static_cast<uint64_t>(st.st_size);
  fs.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return fs;
}

Result<std::unique_ptr<FileShardSource>> FileShardSource::Open(const std::string& path,
                                                               std::string display_name) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int e = errno;
    return Status::IOError("cannot open " + display_name + ": " + ErrnoText(e), e);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    int e = errno;
    return Status::IOError("cannot stat " + display_name + ": " + ErrnoText(e), e);
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(display_name + " is not a regular file");
  }
  FileStat fs;
  fs.size = static_cast<uint64_t>(st.st_size);
  fs.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return std::unique_ptr<FileShardSource>(
      new FileShardSource(std::move(fd), std::move(display_name), fs));
}

Result<size_t> FileShardSource::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  if (offset >= stat_.size) return size_t{0};
  size_t want = buf.size();
  if (want > stat_.size - offset) want = static_cast<size_t>(stat_.size - offset);
  size_t done = 0;
  if (WaitNotice* notice = CurrentWaitNotice(); notice != nullptr && want > 0) {
    done = ReadCached(offset, buf.first(want));
    if (done < want) notice->BeforeWait();
  }
  while (done < want) {
    ssize_t n = ::pread(fd_.get(), buf.data() + done, want - done,
                        static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      return Status::IOError(name_ + ": read failed at offset " + std::to_string(offset + done) +
                                 ": " + ErrnoText(e),
                             e);
    }
    if (n == 0) break;  // the file shrank underneath us; the caller sees a short read
    done += static_cast<size_t>(n);
  }
  return done;
}

size_t FileShardSource::ReadCached(uint64_t offset, std::span<uint8_t> buf) const {
  if (!nowait_.load(std::memory_order_relaxed)) return 0;
  iovec iov{buf.data(), buf.size()};
  for (;;) {
    const ssize_t n = ::preadv2(fd_.get(), &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    // Not on this file system: every read is taken to wait from now on.
    if (errno == EOPNOTSUPP || errno == EINVAL) nowait_.store(false, std::memory_order_relaxed);
    // EAGAIN: the first page is not cached (its read has been started); an error the blocking
    // read that follows reports.
    return 0;
  }
}

Result<size_t> MemoryShardSource::ReadAt(uint64_t offset, std::span<uint8_t> buf) const {
  if (offset >= bytes_.size()) return size_t{0};
  size_t n = buf.size();
  if (n > bytes_.size() - offset) n = static_cast<size_t>(bytes_.size() - offset);
  if (n > 0) std::memcpy(buf.data(), bytes_.data() + offset, n);  // empty spans may be null
  return n;
}

}  // namespace packfs
