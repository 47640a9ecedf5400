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

// The name a new thread has after NameThread(name).
std::string NamedThreadSees(const char* name) {
  std::string seen;
  std::thread([&] {
    NameThread(name);
    seen = OwnName();
  }).join();
  return seen;
}

TEST(ThreadNameTest, NamesTheCallingThreadOnly) {
  const std::string main_name = OwnName();
  EXPECT_EQ(NamedThreadSees("packfs-walk"), "packfs-walk");
  EXPECT_EQ(OwnName(), main_name);
}

TEST(ThreadNameTest, LongNamesAreCutTo15Bytes) {
  EXPECT_EQ(NamedThreadSees("a-name-longer-than-fifteen-bytes"), "a-name-longer-t");
}

}  // namespace
}  // namespace packfs
