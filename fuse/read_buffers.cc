// ReadBuffers: shared LIFO of reply buffers with a resident bound (see read_buffers.h).
#include "fuse/read_buffers.h"

#include <sys/mman.h>
#include <unistd.h>

namespace packfs {
namespace {

// Gives back the whole pages inside `buf` (its bytes are dead: the next read overwrites them,
// and a released anonymous page reads back as zeros).
void ReleasePages(std::vector<uint8_t>& buf) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t base = reinterpret_cast<uintptr_t>(buf.data());
  const uintptr_t from = (base + page - 1) & ~(page - 1);
  const uintptr_t to = (base + buf.size()) & ~(page - 1);
  if (to > from) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace

std::vector<uint8_t> ReadBuffers::Take() {
  std::vector<uint8_t> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      Idle top = std::move(idle_.back());
      idle_.pop_back();
      resident_ -= top.resident;
      out = std::move(top.buf);
    }
  }
  // Outside the lock: a new allocation. Its pages fault in only as reads touch them.
  if (out.capacity() < buffer_bytes_) out.reserve(buffer_bytes_);
  return out;
}

void ReadBuffers::Give(std::vector<uint8_t> buf) {
  if (buf.capacity() == 0) return;
  const size_t resident = buf.capacity();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (resident_ + resident <= resident_max_) {
      resident_ += resident;
      idle_.push_back(Idle{std::move(buf), resident});
      return;
    }
  }
  // Past the bound: keep the allocation (its address space only) but not its pages. Outside
  // the lock: madvise takes the process's memory map lock.
  ReleasePages(buf);
  std::lock_guard<std::mutex> lock(mu_);
  idle_.insert(idle_.begin(), Idle{std::move(buf), 0});  // taken last: it must fault back in
}

std::string ReadBuffers::Json() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const Idle& i : idle_) bytes += i.buf.capacity();
  return "\"read_buffers\": {\"buffers\": " + std::to_string(idle_.size()) +
         ", \"idle_bytes\": " + std::to_string(bytes) +
         ", \"idle_resident_bytes\": " + std::to_string(resident_) +
         ", \"resident_max_bytes\": " + std::to_string(resident_max_) + "}";
}

size_t ReadBuffers::resident_idle_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resident_;
}

}  // namespace packfs
