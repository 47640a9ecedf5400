// Real HTTP and S3 servers for remote-source tests, on 127.0.0.1 with free ports, each in its own
// temp dir: nginx (static files with ranges), tests/support/fault_server.py (misbehaviour on
// demand) and moto_server (S3). Each object owns its child process and stops it on destruction.
// Not thread-safe; a test (or suite) owns its servers.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace packfs::testing {

// A child process with stdout/stderr to a log file; SIGTERM then SIGKILL and reaped on Stop().
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { Stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Starts argv (PATH search) with extra "NAME=value" environment entries; false on failure.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::vector<std::string>& extra_env = {});
  void Stop();
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// For a test whose server did not start, `why` being the reason Start gave: skips the test when
// the program is not installed here, fails it otherwise (installed, yet it did not come up).
void SkipOrFailWithoutServer(const std::string& why);

// A port that was free a moment ago (bound to port 0 and released).
int FreeLoopbackPort();
// Polls until a TCP connect to 127.0.0.1:port works; false after timeout_ms.
bool WaitForPort(int port, int timeout_ms);

// What each server below has: its temp dir, its child process (stopped with it) and its port.
class LoopbackServer {
 public:
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 protected:
  LoopbackServer() = default;
  // Starts the program `argv(port)` names for a free port (it may write its config first), its
  // output to dir_/`log`, until it accepts connections within wait_ms; tries three ports, as
  // another process may take one between its choice and the bind. False with *why naming
  // `name` and holding dir_/`error_log` when it does not come up.
  bool StartOnFreePort(const std::string& name,
                       const std::function<std::vector<std::string>(int port)>& argv,
                       const std::string& log, const std::string& error_log, int wait_ms,
                       std::string* why);
  TempDir dir_;
  ChildProcess proc_;
  int port_ = 0;
};

// nginx serving `root` (static files; ranges, ETag, Accept-Ranges as nginx does by default).
class NginxServer : public LoopbackServer {
 public:
  // Empty with *why set when nginx is not installed or does not come up.
  static std::unique_ptr<NginxServer> Start(const std::string& root, std::string* why);
  // Access log lines: "<connection serial> <status> <request uri>".
  std::string AccessLog() const;
  // How many access-log lines contain `part`, once the log has held still for 200 ms (at most
  // 10 s). nginx logs a request after its response has gone out, so a client can be done before
  // its line is there; counting at once races with that (seen under load).
  size_t SettledRequests(const std::string& part) const;
};

// Python's own `python3 -m http.server` serving `root`: HEAD and GET, but no byte ranges (a Range
// request gets 200 and the whole file), the server people reach for first.
class PythonHttpServer : public LoopbackServer {
 public:
  static std::unique_ptr<PythonHttpServer> Start(const std::string& root, std::string* why);
};

// fault_server.py serving `root` (see that file for the fault paths).
class FaultServer : public LoopbackServer {
 public:
  static std::unique_ptr<FaultServer> Start(const std::string& root, std::string* why);
};

// moto_server (S3 emulator) with auth initially off. Setup goes through boto3 (Python()).
class MotoServer : public LoopbackServer {
 public:
  static std::unique_ptr<MotoServer> Start(std::string* why);
  // The S3 endpoint (url()).
  std::string endpoint() const { return url(); }
  // Runs a Python snippet with `s3` (a boto3 S3 client on this server, dummy credentials) and
  // `iam` in scope; returns its stdout; throws std::runtime_error with stderr on failure.
  std::string Python(const std::string& code) const;
  struct Credentials {
    std::string key;
    std::string secret;
  };
  // Python(setup), then in the same run (boto3 takes seconds to import) the creation of IAM user
  // "packfs" allowed every S3 action: returns its access key, to sign with once SetAuth(true).
  Credentials SetUpWithUser(const std::string& setup) const;
  // Turns moto's IAM authentication (signature and key checks) on or off.
  void SetAuth(bool on) const;
};

}  // namespace packfs::testing
