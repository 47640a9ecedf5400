// Starting tests/support/delay_proxy.py and parsing its log.
#include "tests/support/delay_proxy.h"

#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

namespace packfs::testing {

std::unique_ptr<DelayProxy> DelayProxy::Start(int upstream_port, double delay_ms,
                                              std::string* why) {
  if (!HasCommand("python3")) {
    *why = "python3 is not installed";
    return nullptr;
  }
  auto p = std::unique_ptr<DelayProxy>(new DelayProxy());
  const std::string d = p->dir_.path();
  if (!p->proc_.Start({"python3", std::string(PACKFS_SOURCE_DIR) + "/tests/support/delay_proxy.py",
                       "--delay-ms", std::to_string(delay_ms), "--log", d + "/chunks.log",
                       std::to_string(upstream_port), d + "/port"},
                      d + "/stderr.log")) {
    *why = "cannot start delay_proxy.py";
    return nullptr;
  }
  // The port file appears once the socket listens (a busy machine may take seconds to start
  // Python).
  for (int i = 0; i < 1500; ++i) {
    if (::access((d + "/port").c_str(), R_OK) == 0) {
      p->port_ = std::stoi(ReadFile(d + "/port"));
      if (WaitForPort(p->port_, 10000)) return p;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *why = "delay_proxy.py did not come up: " + ReadFile(d + "/stderr.log");
  return nullptr;
}

std::vector<DelayProxy::Chunk> DelayProxy::Log() const {
  std::vector<Chunk> out;
  const std::string path = dir_.path() + "/chunks.log";
  if (::access(path.c_str(), R_OK) != 0) return out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    // conn=N bytes=B held_ms=H head=REST OF LINE
    Chunk c;
    const size_t head = line.find(" head=");
    if (head == std::string::npos) continue;
    c.head = line.substr(head + 6);
    std::istringstream fields(line.substr(0, head));
    std::string f;
    while (fields >> f) {
      const size_t eq = f.find('=');
      if (eq == std::string::npos) continue;
      const std::string k = f.substr(0, eq), v = f.substr(eq + 1);
      if (k == "conn") c.conn = std::stoi(v);
      if (k == "bytes") c.bytes = std::stoul(v);
      if (k == "held_ms") c.held_ms = std::stod(v);
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace packfs::testing
