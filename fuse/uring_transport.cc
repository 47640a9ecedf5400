// UringTransport: FUSE requests over io_uring beside libfuse's /dev/fuse loop (see the header).
#include "fuse/uring_transport.h"

#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/thread_name.h"

namespace packfs {
// Named, not anonymous: UringTransport::Entry (a member type of a class with linkage) holds them.
namespace uring_abi {

// The kernel ABI (include/uapi/linux/fuse.h, protocol 7.42); Debian 12's headers predate it.
constexpr uint32_t kCmdRegister = 1;
constexpr uint32_t kCmdCommitAndFetch = 2;
constexpr size_t kSqeCmdOffset = 48;  // the command area of a 128-byte SQE
constexpr uint32_t kOpInit = 26;               // FUSE_INIT
constexpr uint32_t kInitExt = 1u << 30;        // FUSE_INIT_EXT: flags2 is valid
constexpr uint32_t kOverIoUring2 = 1u << 9;    // FUSE_OVER_IO_URING (bit 41) in flags2
constexpr size_t kInitInFlags = 40 + 12;       // fuse_init_in.flags after the in header
constexpr size_t kInitInFlags2 = 40 + 16;      // fuse_init_in.flags2
constexpr size_t kInitOutFlags = 12;           // fuse_init_out.flags
constexpr size_t kInitOutFlags2 = 32;          // fuse_init_out.flags2

struct InHeader {
  uint32_t len;  // the classic request's length: header + all in-args
  uint32_t opcode;
  uint64_t unique;
  uint64_t nodeid;
  uint32_t uid, gid, pid;
  uint16_t total_extlen, padding;
};
struct OutHeader {
  uint32_t len;
  int32_t error;
  uint64_t unique;
};
struct EntInOut {
  uint64_t flags;
  uint64_t commit_id;
  uint32_t payload_sz;  // bytes in the payload buffer, both ways
  uint32_t padding;
  uint64_t reserved;
};
struct ReqHeader {
  uint8_t in_out[128];  // InHeader in, OutHeader back
  uint8_t op_in[128];   // the opcode's first in-arg (not written when it has none)
  EntInOut ent;
};
struct CmdReq {
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(InHeader) == 40 && sizeof(OutHeader) == 16);
static_assert(sizeof(ReqHeader) == 288 && sizeof(CmdReq) == 24);

}  // namespace uring_abi

namespace {

using uring_abi::CmdReq;
using uring_abi::kCmdCommitAndFetch;
using uring_abi::kCmdRegister;
using uring_abi::kInitExt;
using uring_abi::kInitInFlags;
using uring_abi::kInitInFlags2;
using uring_abi::kInitOutFlags;
using uring_abi::kInitOutFlags2;
using uring_abi::kOpInit;
using uring_abi::kOverIoUring2;
using uring_abi::kSqeCmdOffset;
using uring_abi::InHeader;
using uring_abi::OutHeader;
using uring_abi::ReqHeader;

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

}  // namespace

struct UringTransport::Ring {
  io_uring uring{};
  bool initialized = false;
  int fd = -1;
  uint16_t qid = 0;
  std::vector<std::unique_ptr<Entry>> entries;
  ~Ring() {
    if (initialized) io_uring_queue_exit(&uring);
  }
};

struct UringTransport::Entry {
  Ring* ring = nullptr;
  void* mem = MAP_FAILED;  // one mapping: header page, then payload
  size_t mem_size = 0;
  uring_abi::ReqHeader* header = nullptr;
  uint8_t* payload = nullptr;
  size_t payload_size = 0;
  iovec iov[2] = {};
  std::vector<uint8_t> request;  // the classic request rebuilt for libfuse
  uint64_t commit_id = 0;
  uint64_t unique = 0;
  bool committed = false;
  ~Entry() {
    if (mem != MAP_FAILED) ::munmap(mem, mem_size);
  }
};

namespace {

// The request a ring thread is processing: its reply is the next one libfuse writes with the
// same unique on this thread. Per thread by nature (the ring thread calls into libfuse).
thread_local UringTransport::Entry* t_current = nullptr;

void PrepCommand(UringTransport::Entry* e, uint32_t op) {
  io_uring* ring = &e->ring->uring;
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) {
    io_uring_submit(ring);
    sqe = io_uring_get_sqe(ring);
  }
  if (sqe == nullptr) return;  // cannot happen: a ring holds one command per entry and a poll
  // A 128-byte SQE (IORING_SETUP_SQE128): the command goes in its second half.
  std::memset(static_cast<void*>(sqe), 0, 2 * sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = e->ring->fd;
  sqe->cmd_op = op;
  if (op == kCmdRegister) {
    sqe->addr = reinterpret_cast<uintptr_t>(e->iov);
    sqe->len = 2;
  }
  CmdReq req{};
  req.commit_id = op == kCmdRegister ? 0 : e->commit_id;
  req.qid = e->ring->qid;
  std::memcpy(reinterpret_cast<uint8_t*>(sqe) + kSqeCmdOffset, &req, sizeof req);
  io_uring_sqe_set_data(sqe, e);
}

// Puts the out header and the reply's arguments into the entry and queues the commit; bytes
// already in place (read into ReplyArea()) are not copied, and counted in `in_place`.
ssize_t Commit(UringTransport::Entry* e, OutHeader out, const iovec* args, int count,
               std::atomic<uint64_t>* in_place) {
  size_t total = 0;
  if (out.error == 0) {
    for (int i = 0; i < count; ++i) {
      if (args[i].iov_len > e->payload_size - total) {
        out.error = -EIO;  // cannot happen: replies are bounded by max_read and max_write
        total = 0;
        break;
      }
      uint8_t* dst = e->payload + total;
      if (args[i].iov_base != dst) {
        std::memcpy(dst, args[i].iov_base, args[i].iov_len);
      } else if (in_place != nullptr) {
        in_place->fetch_add(args[i].iov_len, std::memory_order_relaxed);
      }
      total += args[i].iov_len;
    }
  }
  out.len = static_cast<uint32_t>(sizeof out + total);
  std::memcpy(e->header->in_out, &out, sizeof out);
  e->header->ent.payload_sz = static_cast<uint32_t>(total);
  PrepCommand(e, kCmdCommitAndFetch);
  e->committed = true;
  return static_cast<ssize_t>(sizeof out + total);
}

// Where a ring thread runs. Queue q takes the requests of programs running on CPU q: serving
// small ones on that CPU saves a cross-CPU wake-up each (measured on 2 vCPUs, a cold epoch of
// 30,000 small files: by path 17.4-20.4k files/s pinned against 15.6-17.7k not, after a scan
// 23.9-27.9k against 21.0-25.2k). A stream of large replies is the other way round: the reader
// copying out and the thread reading in then share one CPU while the other idles (a 256 MiB
// member from the page cache: 2.2-2.6 GB/s pinned, 3.0-4.1 not). So a thread is pinned while
// its replies are small, may run on any CPU once it sends a large one, and is pinned again
// after kSmallToRepin small ones in a row. Not pinned at all when the CPU is outside this
// process's affinity (cpusets).
class Placement {
 public:
  static constexpr uint32_t kLargeReply = 128 * 1024;
  static constexpr int kSmallToRepin = 16;

  explicit Placement(uint16_t cpu) {
    can_pin_ = ::sched_getaffinity(0, sizeof allowed_, &allowed_) == 0 && cpu < CPU_SETSIZE &&
               CPU_ISSET(cpu, &allowed_);
    CPU_ZERO(&one_);
    if (can_pin_) CPU_SET(cpu, &one_);
    Pin(true);
  }
  // After a reply of `payload` bytes.
  void Served(uint32_t payload) {
    if (!can_pin_) return;
    if (payload >= kLargeReply) {
      small_run_ = 0;
      if (pinned_) Pin(false);
    } else if (!pinned_ && ++small_run_ >= kSmallToRepin) {
      Pin(true);
    }
  }

 private:
  void Pin(bool pin) {
    if (!can_pin_) return;
    (void)::sched_setaffinity(0, sizeof(cpu_set_t), pin ? &one_ : &allowed_);
    pinned_ = pin;
    small_run_ = 0;
  }
  bool can_pin_ = false;
  bool pinned_ = false;
  int small_run_ = 0;
  cpu_set_t allowed_;
  cpu_set_t one_;
};

uint32_t Load32(const void* base, size_t at) {
  uint32_t v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + at, sizeof v);
  return v;
}

}  // namespace

UringTransport* UringTransport::Of(void* userdata) {
  return userdata == nullptr ? nullptr : static_cast<SessionState*>(userdata)->uring;
}

ssize_t UringTransport::HookRead(int fd, void* buf, size_t len, void* userdata) {
  const ssize_t n = ::read(fd, buf, len);
  UringTransport* t = Of(userdata);
  if (t != nullptr && !t->init_seen_.load(std::memory_order_relaxed) &&
      n >= static_cast<ssize_t>(kInitInFlags2 + 4)) {
    InHeader in;
    std::memcpy(&in, buf, sizeof in);
    if (in.opcode == kOpInit) {
      // Whether the kernel offers FUSE_OVER_IO_URING (it does while enable_uring is Y).
      t->init_offers_ring_ = (Load32(buf, kInitInFlags) & kInitExt) != 0 &&
                             (Load32(buf, kInitInFlags2) & kOverIoUring2) != 0;
      t->init_unique_ = in.unique;
      t->init_seen_.store(true);
    }
  }
  return n;
}

std::span<uint8_t> UringTransport::ReplyArea() {
  Entry* e = t_current;
  if (e == nullptr || e->committed) return {};
  return {e->payload, e->payload_size};
}

ssize_t UringTransport::HookWritev(int fd, struct iovec* iov, int count, void* userdata) {
  Entry* e = t_current;
  UringTransport* t = Of(userdata);
  if (e != nullptr && !e->committed && count >= 1 && iov[0].iov_len >= sizeof(OutHeader)) {
    OutHeader out;
    std::memcpy(&out, iov[0].iov_base, sizeof out);
    if (out.unique == e->unique) {
      return Commit(e, out, iov + 1, count - 1,
                    t != nullptr ? &t->counters_->in_place_bytes : nullptr);
    }
  }
  if (t != nullptr && t->init_seen_.load() && !t->init_answered_ && count >= 2 &&
      iov[0].iov_len >= sizeof(OutHeader) && iov[1].iov_len >= kInitOutFlags2 + 4) {
    OutHeader out;
    std::memcpy(&out, iov[0].iov_base, sizeof out);
    if (out.unique == t->init_unique_) {
      t->init_answered_ = true;
      // libfuse 3.14 cannot ask for the ring itself. Asking in INIT binds this connection to
      // it: the kernel then holds new requests until every queue is registered (or a REGISTER
      // fails), and takes ring commands whatever enable_uring says later.
      if (out.error == 0 && t->init_offers_ring_ && t->started_.load()) {
        uint8_t* arg = static_cast<uint8_t*>(iov[1].iov_base);
        const uint32_t flags = Load32(arg, kInitOutFlags) | kInitExt;
        const uint32_t flags2 = Load32(arg, kInitOutFlags2) | kOverIoUring2;
        std::memcpy(arg + kInitOutFlags, &flags, sizeof flags);
        std::memcpy(arg + kInitOutFlags2, &flags2, sizeof flags2);
        t->counters_->bound.store(true);
      }
    }
  }
  return ::writev(fd, iov, count);
}

std::string UringCounters::Json() const {
  return "\"io_uring\": {\"requests\": " + std::to_string(requests.load()) +
         ", \"bound\": " + (bound.load() ? "true" : "false") +
         ", \"failed\": " + (failed.load() ? "true" : "false") +
         ", \"used\": " + (used.load() && !failed.load() ? "true" : "false") +
         ", \"in_place_bytes\": " + std::to_string(in_place_bytes.load()) + "}";
}

bool UringTransport::KernelAllows(std::string* why) {
  const char* param = "/sys/module/fuse/parameters/enable_uring";
  if (::access(param, F_OK) != 0) {
    *why = "this kernel has no FUSE over io_uring (Linux 6.14+ with CONFIG_FUSE_IO_URING)";
    return false;
  }
  if (ReadSmallFile(param) != "Y") {
    *why = std::string("it is off in the kernel: as root, echo Y > ") + param;
    return false;
  }
  std::string disabled = ReadSmallFile("/proc/sys/kernel/io_uring_disabled");
  if (!disabled.empty() && disabled != "0") {
    *why = "io_uring is disabled (sysctl kernel.io_uring_disabled=" + disabled + ")";
    return false;
  }
  return true;
}

int UringTransport::QueueCount() {
  // "0-3,8-11": the kernel makes one queue per possible CPU.
  std::stringstream ranges(ReadSmallFile("/sys/devices/system/cpu/possible"));
  std::string range;
  int count = 0;
  while (std::getline(ranges, range, ',')) {
    size_t dash = range.find('-');
    try {
      int lo = std::stoi(range.substr(0, dash));
      int hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1));
      count += hi - lo + 1;
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

UringTransport::UringTransport(fuse_session* se, const Logger& log,
                               std::shared_ptr<UringCounters> counters, Options options)
    : se_(se), log_(log), counters_(std::move(counters)), options_(options) {}

UringTransport::~UringTransport() {
  // After a lazy unmount with files still open the kernel keeps the connection (and the
  // entries) alive, so the threads are woken through the eventfd rather than waited for.
  stopping_.store(true);
  if (efd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(efd_, &one, sizeof one);
  }
  for (std::thread& t : threads_) t.join();
  rings_.clear();  // closes the rings: their hold on the /dev/fuse file goes before libfuse's fd
  if (efd_ >= 0) ::close(efd_);
}

Status UringTransport::InstallIo() {
  fd_ = fuse_session_fd(se_);
  fuse_custom_io io{};
  io.writev = HookWritev;
  io.read = HookRead;
  int rc = fuse_session_custom_io(se_, &io, fd_);
  if (rc != 0) return Status::IOError("io_uring: could not hook the session's replies: " +
                                      ErrnoText(-rc));
  return Status::OK();
}

void UringTransport::Start() {
  const int queues = QueueCount();
  if (queues <= 0 || queues > 65535) {
    counters_->failed.store(true);
    log_.Warning("io_uring: cannot read /sys/devices/system/cpu/possible; "
                 "serving through /dev/fuse");
    return;
  }
  efd_ = ::eventfd(0, EFD_CLOEXEC);
  if (efd_ < 0) {
    counters_->failed.store(true);
    log_.Warning("io_uring: no eventfd: " + ErrnoText(errno) + "; serving through /dev/fuse");
    return;
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t payload = (options_.payload_bytes + page - 1) / page * page;
  std::vector<std::unique_ptr<Ring>> rings;
  for (int q = 0; q < queues; ++q) {
    for (int t = 0; t < std::max(1, options_.threads_per_queue); ++t) {
      auto ring = std::make_unique<Ring>();
      ring->fd = fd_;
      ring->qid = static_cast<uint16_t>(q);
      auto e = std::make_unique<Entry>();
      e->ring = ring.get();
      e->mem_size = page + payload;
      // Anonymous and untouched until used: a small request faults in a page or two.
      e->mem = ::mmap(nullptr, e->mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
      if (e->mem == MAP_FAILED) {
        counters_->failed.store(true);
        log_.Warning("io_uring: no memory for the ring buffers; serving through /dev/fuse");
        return;
      }
      e->header = static_cast<ReqHeader*>(e->mem);
      e->payload = static_cast<uint8_t*>(e->mem) + page;
      e->payload_size = payload;
      e->iov[0] = {e->header, sizeof(ReqHeader)};
      e->iov[1] = {e->payload, payload};
      e->request.reserve(4096);
      ring->entries.push_back(std::move(e));
      if (io_uring_queue_init(4, &ring->uring, IORING_SETUP_SQE128) != 0) {
        counters_->failed.store(true);
        log_.Warning("io_uring: could not set up a ring; serving through /dev/fuse");
        return;
      }
      ring->initialized = true;
      rings.push_back(std::move(ring));
    }
  }
  rings_ = std::move(rings);
  for (auto& ring : rings_) {
    threads_.emplace_back([this, r = ring.get()] {
      NameThread("packfs-ring");
      RunRing(r);
    });
  }
  started_.store(true);  // every queue will register: INIT may bind the connection to the ring
  counters_->used.store(true);
}

void UringTransport::RunRing(Ring* r) {
  Placement place(r->qid);
  for (auto& e : r->entries) PrepCommand(e.get(), kCmdRegister);
  io_uring_sqe* wake = io_uring_get_sqe(&r->uring);
  io_uring_prep_poll_add(wake, efd_, POLLIN);
  io_uring_sqe_set_data(wake, nullptr);
  size_t live = r->entries.size();
  bool stop = false;
  while (live > 0 && !stop) {
    int rc = io_uring_submit_and_wait(&r->uring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN) {
      log_.Error("io_uring: waiting for requests failed: " + ErrnoText(-rc));
      return;
    }
    io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&r->uring, head, cqe) {
      ++seen;
      auto* e = static_cast<Entry*>(io_uring_cqe_get_data(cqe));
      const int res = cqe->res;
      if (e == nullptr) {  // the eventfd: the session is ending
        stop = true;
        continue;
      }
      if (stop) continue;
      if (res == 0) {
        counters_->requests.fetch_add(1, std::memory_order_relaxed);
        Serve(e);
        place.Served(e->header->ent.payload_sz);
        continue;
      }
      if ((res == -EAGAIN || res == -EINTR) && !stopping_.load()) {
        // REGISTER before the kernel has processed libfuse's INIT reply: try again shortly.
        ::usleep(1000);
        PrepCommand(e, kCmdRegister);
        continue;
      }
      --live;
      if (res == -ENOTCONN || res == -ECONNABORTED || res == -ECANCELED || res == -EAGAIN) {
        continue;  // unmounted, aborted, or stopping
      }
      if (!counters_->failed.exchange(true)) {
        log_.Warning("io_uring: the kernel refused a ring command: " + ErrnoText(-res) +
                     "; serving through /dev/fuse");
      }
    }
    io_uring_cq_advance(&r->uring, seen);
  }
}

void UringTransport::Serve(Entry* e) {
  const ReqHeader* h = e->header;
  InHeader in;
  std::memcpy(&in, h->in_out, sizeof in);
  const size_t payload = h->ent.payload_sz;
  e->commit_id = h->ent.commit_id;
  e->unique = in.unique;
  e->committed = false;
  // The classic layout is the header, the first in-arg, then the rest (the payload); the
  // header's length is the classic one, so the first in-arg's size is what is left.
  if (payload > e->payload_size || in.len < sizeof in + payload ||
      in.len - sizeof in - payload > sizeof h->op_in) {
    log_.Error("io_uring: malformed request (opcode " + std::to_string(in.opcode) + ", length " +
               std::to_string(in.len) + ", payload " + std::to_string(payload) + ")");
    Commit(e, OutHeader{0, -EIO, in.unique}, nullptr, 0, nullptr);
    return;
  }
  const size_t arg0 = in.len - sizeof in - payload;
  e->request.resize(in.len);
  std::memcpy(e->request.data(), &in, sizeof in);
  std::memcpy(e->request.data() + sizeof in, h->op_in, arg0);
  if (payload > 0) std::memcpy(e->request.data() + sizeof in + arg0, e->payload, payload);
  fuse_buf buf{};
  buf.mem = e->request.data();
  buf.size = in.len;
  t_current = e;
  fuse_session_process_buf(se_, &buf);
  t_current = nullptr;
  if (!e->committed) {
    // Every request on the ring gets an answer from libfuse; if one did not, the entry would
    // be lost to the kernel's queue, so answer it here.
    log_.Error("io_uring: no reply to opcode " + std::to_string(in.opcode) + "; answered EIO");
    Commit(e, OutHeader{0, -EIO, in.unique}, nullptr, 0, nullptr);
  }
}

}  // namespace packfs
