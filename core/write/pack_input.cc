// Reading pack inputs: whole small inputs in one read, large ones streamed, and the parallel
// prefetcher that keeps a writer fed from cold caches or network filesystems.
#include "core/write/pack_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/base/crc32.h"
#include "core/base/thread_name.h"

namespace packfs {
namespace {

Result<UniqueFd> OpenInput(const PackInput& in) {
  UniqueFd fd(::open(in.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int e = errno;
    if (e == ENOENT) {
      return Status::NotFound("input " + in.path + " vanished while packing (it was listed " +
                              "before writing started); rerun once the source is stable");
    }
    return Status::IOError("cannot open input " + in.path + ": " + ErrnoText(e), e);
  }
  return fd;
}

Status ReadError(const PackInput& in, int e) {
  return Status::IOError("cannot read input " + in.path + ": " + ErrnoText(e), e);
}

}  // namespace

Status InputChanged(const PackInput& in, uint64_t got) {
  std::string what = got > in.size ? "grew beyond " : "holds only " + std::to_string(got) + " of ";
  return Status::IOError("input " + in.path + " changed while being packed: it " + what +
                             std::to_string(in.size) + " bytes listed before writing; rerun once " +
                             "the source is stable (the unfinished shard is left as a temp file)",
                         EIO);
}

namespace {
// Makes *buf hold `n` bytes whose old contents do not matter (growing it copies nothing: a
// vector growing by resize() copies its old bytes, one at a time with this allocator).
void ResizeForRead(InputBuffer* buf, size_t n) {
  if (buf->capacity() < n) {
    buf->clear();
    buf->reserve(n);
  }
  buf->resize(n);
}
}  // namespace

Status ReadInput(const PackInput& in, InputBuffer* out, uint32_t* crc) {
  if (in.source) {
    ResizeForRead(out, in.size);
    PACKFS_ASSIGN_OR_RETURN(size_t got, in.source->ReadAt(in.offset, *out));
    if (got != in.size) return InputChanged(in, got);
    *crc = Crc32(0, out->data(), out->size());
    return Status::OK();
  }
  PACKFS_ASSIGN_OR_RETURN(UniqueFd fd, OpenInput(in));
  // One spare byte: a whole file that grew shows it in the same read(2).
  uint64_t want = in.whole_file ? in.size + 1 : in.size;
  ResizeForRead(out, want);
  uint64_t total = 0;
  while (total < want) {
    size_t ask = static_cast<size_t>(want - total);
    ssize_t k = in.whole_file ? ::read(fd.get(), out->data() + total, ask)
                              : ::pread(fd.get(), out->data() + total, ask,
                                        static_cast<off_t>(in.offset + total));
    if (k < 0) {
      if (errno == EINTR) continue;
      return ReadError(in, errno);
    }
    if (k == 0) break;
    total += static_cast<uint64_t>(k);
    // A short read of a regular file ends at end of file: skip the read(2) that would return 0.
    if (in.whole_file && static_cast<size_t>(k) < ask && total == in.size) break;
  }
  if (total != in.size) return InputChanged(in, total);
  out->resize(in.size);
  *crc = Crc32(0, out->data(), out->size());
  return Status::OK();
}

Result<InputStream> InputStream::Open(const PackInput& in) {
  if (in.source) return InputStream(UniqueFd(), &in);
  PACKFS_ASSIGN_OR_RETURN(UniqueFd fd, OpenInput(in));
  return InputStream(std::move(fd), &in);
}

Result<size_t> InputStream::Read(std::span<uint8_t> buf) {
  const PackInput& in = *in_;
  if (done_ == in.size) {
    if (in.whole_file) {
      uint8_t probe;
      ssize_t k;
      do {
        k = ::read(fd_.get(), &probe, 1);
      } while (k < 0 && errno == EINTR);
      if (k < 0) return ReadError(in, errno);
      if (k > 0) return InputChanged(in, in.size + 1);
    }
    return size_t{0};
  }
  size_t ask = static_cast<size_t>(std::min<uint64_t>(buf.size(), in.size - done_));
  if (in.source) {
    PACKFS_ASSIGN_OR_RETURN(size_t k, in.source->ReadAt(in.offset + done_, buf.subspan(0, ask)));
    if (k == 0) return InputChanged(in, done_);
    done_ += k;
    return k;
  }
  while (true) {
    ssize_t k = in.whole_file ? ::read(fd_.get(), buf.data(), ask)
                              : ::pread(fd_.get(), buf.data(), ask,
                                        static_cast<off_t>(in.offset + done_));
    if (k < 0) {
      if (errno == EINTR) continue;
      return ReadError(in, errno);
    }
    if (k == 0) return InputChanged(in, done_);
    done_ += static_cast<uint64_t>(k);
    return static_cast<size_t>(k);
  }
}

// ----------------------------------------------------------------------------------------------

Prefetcher::Prefetcher(const std::vector<PackInput>& inputs, std::vector<size_t> order,
                       int threads, uint64_t small_limit, uint64_t window_bytes)
    : inputs_(inputs),
      order_(std::move(order)),
      small_limit_(small_limit),
      window_bytes_(window_bytes),
      items_(order_.size()),
      ready_(order_.size(), 0) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      NameThread("mkpack-input");
      Worker();
    });
  }
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool Prefetcher::Claimable() const {
  if (next_claim_ >= order_.size()) return false;
  if (next_claim_ == consumed_) return true;  // the consumer's own item: always allowed
  if (next_claim_ - consumed_ >= 8192) return false;
  const PackInput& in = inputs_[order_[next_claim_]];
  uint64_t cost = in.size <= small_limit_ ? in.size : 0;
  return bytes_ahead_ + cost <= window_bytes_;
}

void Prefetcher::Worker() {
  std::unique_lock<std::mutex> lk(mu_);
  while (true) {
    work_cv_.wait(lk, [this] { return stop_ || Claimable(); });
    if (stop_) return;
    size_t pos = next_claim_++;
    const PackInput& in = inputs_[order_[pos]];
    bool small = in.size <= small_limit_;
    if (small) bytes_ahead_ += in.size;
    Item item;
    if (small && !free_bufs_.empty()) {
      item.data = std::move(free_bufs_.back());
      free_bufs_.pop_back();
      free_bytes_ -= item.data.capacity();
    }
    lk.unlock();
    if (small) {
      item.prefetched = true;
      item.status = ReadInput(in, &item.data, &item.crc);
    }
    lk.lock();
    items_[pos] = std::move(item);
    ready_[pos] = 1;
    if (pos == consumed_) ready_cv_.notify_one();  // only the awaited item wakes the consumer
  }
}

Prefetcher::Item Prefetcher::Take(size_t seq) {
  std::unique_lock<std::mutex> lk(mu_);
  ready_cv_.wait(lk, [&] { return ready_[seq] != 0; });
  Item item = std::move(items_[seq]);
  items_[seq] = Item();
  consumed_ = seq + 1;
  const PackInput& in = inputs_[order_[seq]];
  if (in.size <= small_limit_) bytes_ahead_ -= in.size;
  bool wake = next_claim_ < order_.size();
  lk.unlock();
  if (wake) work_cv_.notify_one();
  return item;
}

void Prefetcher::Recycle(InputBuffer buf) {
  // Up to a window's worth: what the readers hold ahead of the writer comes back to them, so a
  // warm run touches no new heap pages (on these VMs first touches were a fifth of the CPU).
  std::lock_guard<std::mutex> lk(mu_);
  if (free_bytes_ + buf.capacity() > window_bytes_) return;
  free_bytes_ += buf.capacity();
  free_bufs_.push_back(std::move(buf));
}

}  // namespace packfs
