// NameThread: the calling thread's name as /proc shows it, cut to the kernel's 15 bytes.
#include "core/base/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace packfs {
namespace {

std::string OwnName() {
  std::ifstream in("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThreadNameTest, NamesTheCallingThreadOnly) {
  const std::string main_name = OwnName();
  std::string seen;
  std::thread([&] {
    NameThread("packfs-walk");
    seen = OwnName();
  }).join();
  EXPECT_EQ(seen, "packfs-walk");
  EXPECT_EQ(OwnName(), main_name);
}

TEST(ThreadNameTest, LongNamesAreCutTo15Bytes) {
  std::string seen;
  std::thread([&] {
    NameThread("a-name-longer-than-fifteen-bytes");
    seen = OwnName();
  }).join();
  EXPECT_EQ(seen, "a-name-longer-t");
}

}  // namespace
}  // namespace packfs
