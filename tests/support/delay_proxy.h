// Starts tests/support/delay_proxy.py (a loopback TCP proxy that holds each client->server chunk
// for a fixed delay: a distant server without `tc netem`) in front of a local server, and reads
// its log of forwarded chunks. The object owns the proxy process and stops it on destruction.
// Not thread-safe; a test (or suite) owns its proxy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/http_servers.h"
#include "tests/support/test_util.h"

namespace packfs::testing {

class DelayProxy {
 public:
  // One forwarded client chunk as the proxy logged it.
  struct Chunk {
    int conn = 0;
    size_t bytes = 0;
    double held_ms = 0;  // how long the proxy really held it before forwarding
    std::string head;    // the HTTP request line when the chunk starts one, else "-"
  };

  // Proxies 127.0.0.1:<new port> to 127.0.0.1:upstream_port holding chunks delay_ms. Empty with
  // *why set when python3 is missing or the proxy does not come up.
  static std::unique_ptr<DelayProxy> Start(int upstream_port, double delay_ms, std::string* why);
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Every chunk forwarded so far, in the order they were forwarded.
  std::vector<Chunk> Log() const;

 private:
  TempDir dir_;
  ChildProcess proc_;
  int port_ = 0;
};

}  // namespace packfs::testing
