// ReadBuffers: buffers come back last-in-first-out; idle buffers past the resident bound give
// their pages back to the system (checked with mincore) and read back as zeros, while those
// within it keep their pages and bytes.
#include "fuse/read_buffers.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

namespace packfs {
namespace {

constexpr size_t kMiB = 1 << 20;

// Resident pages among the whole pages inside `buf`.
size_t ResidentPages(const std::vector<uint8_t>& buf) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = (reinterpret_cast<uintptr_t>(buf.data()) + page - 1) & ~(page - 1);
  const uintptr_t to = (reinterpret_cast<uintptr_t>(buf.data()) + buf.size()) & ~(page - 1);
  std::vector<unsigned char> vec((to - from) / page);
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(from), to - from, vec.data()), 0);
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(ReadBuffersTest, IdleBuffersPastTheBoundReleaseTheirPages) {
  ReadBuffers pool(2 * kMiB);
  std::vector<std::vector<uint8_t>> taken;
  for (int i = 0; i < 3; ++i) {
    taken.push_back(pool.Take());
    EXPECT_EQ(taken.back().capacity(), 0u);  // none idle yet: a new buffer
    taken.back().assign(kMiB, static_cast<uint8_t>(i + 1));
  }
  const uint8_t* first = taken[0].data();
  const uint8_t* third = taken[2].data();
  pool.Give(std::move(taken[0]));
  pool.Give(std::move(taken[1]));
  EXPECT_EQ(pool.resident_idle_bytes(), 2 * kMiB);
  pool.Give(std::move(taken[2]));  // past the bound
  EXPECT_EQ(pool.resident_idle_bytes(), 2 * kMiB);

  std::vector<uint8_t> a = pool.Take();  // the last kept: buffer 1 (filled with 2s)
  std::vector<uint8_t> b = pool.Take();  // then buffer 0
  std::vector<uint8_t> c = pool.Take();  // the released one comes last
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(c.data(), third);
  EXPECT_EQ(a[kMiB / 2], 2);
  EXPECT_EQ(b[kMiB - 1], 1);
  const size_t pages = kMiB / static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GE(ResidentPages(a), pages - 1);
  EXPECT_EQ(ResidentPages(c), 0u);
  EXPECT_EQ(c[kMiB / 2], 0);  // released pages read back as zeros
  EXPECT_EQ(pool.resident_idle_bytes(), 0u);
  EXPECT_EQ(pool.Take().capacity(), 0u);
}

// A buffer's pages stay touched up to the largest read it served: it counts with its
// capacity, so a small last read does not hide a large resident buffer from the bound.
TEST(ReadBuffersTest, ABufferCountsWithItsCapacityNotItsLastRead) {
  ReadBuffers pool(2 * kMiB);
  std::vector<std::vector<uint8_t>> taken(3);
  for (auto& b : taken) {
    b = pool.Take();
    b.assign(kMiB, 7);
    b.resize(4096);  // the last read was small; the pages of the first stay
  }
  for (auto& b : taken) pool.Give(std::move(b));
  EXPECT_EQ(pool.resident_idle_bytes(), 2 * kMiB);  // the third went past the bound
  const std::string json = pool.Json();
  EXPECT_NE(json.find("\"read_buffers\": {\"buffers\": 3, \"idle_bytes\": 3145728, "
                      "\"idle_resident_bytes\": 2097152, \"resident_max_bytes\": 2097152}"),
            std::string::npos)
      << json;
  std::vector<uint8_t> a = pool.Take();
  EXPECT_EQ(pool.resident_idle_bytes(), kMiB);
  EXPECT_NE(pool.Json().find("\"buffers\": 2, \"idle_bytes\": 2097152, "
                                "\"idle_resident_bytes\": 1048576"),
            std::string::npos);
  pool.Give(std::move(a));
}

// With a buffer size set, every buffer taken (new or idle) has that capacity, so a read up to it
// never reallocates the buffer (its bytes stay where they are).
TEST(ReadBuffersTest, BuffersComeWithTheCapacitySet) {
  ReadBuffers pool(4 * kMiB);
  std::vector<uint8_t> small = pool.Take();
  small.assign(4096, 3);
  pool.Give(std::move(small));  // a buffer from before the size was set
  pool.SetBufferBytes(kMiB + 8192);
  std::vector<uint8_t> a = pool.Take();  // the idle one, grown
  std::vector<uint8_t> b = pool.Take();  // a new one
  for (std::vector<uint8_t>* v : {&a, &b}) {
    EXPECT_GE(v->capacity(), kMiB + 8192);
    const uint8_t* data = v->data();
    v->resize(kMiB + 8192);
    EXPECT_EQ(v->data(), data);
  }
  EXPECT_EQ(a[0], 3);  // the bytes it held stay
  pool.Give(std::move(a));
  pool.Give(std::move(b));
  EXPECT_EQ(pool.resident_idle_bytes(), 2 * (kMiB + 8192));
}

}  // namespace
}  // namespace packfs
