// Starting and stopping nginx, the fault server and moto_server for remote-source tests.
#include "tests/support/http_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace packfs::testing {
namespace {

bool PortOpen(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

std::string SourceDir() { return PACKFS_SOURCE_DIR; }

}  // namespace

bool ChildProcess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                         const std::vector<std::string>& extra_env) {
  Stop();
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, log, 1);
  posix_spawn_file_actions_adddup2(&fa, log, 2);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const auto& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(log);
  if (rc != 0) return false;
  pid_ = pid;
  return true;
}

void ChildProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  int status;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void SkipOrFailWithoutServer(const std::string& why) {
  if (why.find("not installed") != std::string::npos) GTEST_SKIP() << why;
  FAIL() << why;
}

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind failed");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool WaitForPort(int port, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (PortOpen(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool LoopbackServer::StartOnFreePort(
    const std::string& name, const std::function<std::vector<std::string>(int port)>& argv,
    const std::string& log, const std::string& error_log, int wait_ms, std::string* why) {
  const std::string d = dir_.path();
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreeLoopbackPort();
    if (!proc_.Start(argv(port_), d + "/" + log)) {
      *why = "cannot start " + name;
      return false;
    }
    if (WaitForPort(port_, wait_ms)) return true;
    proc_.Stop();
  }
  *why = name + " did not come up: " + ReadFile(d + "/" + error_log);
  return false;
}

std::unique_ptr<NginxServer> NginxServer::Start(const std::string& root, std::string* why) {
  std::string nginx = HasCommand("nginx") ? "nginx" : "/usr/sbin/nginx";
  if (::access("/usr/sbin/nginx", X_OK) != 0 && !HasCommand("nginx")) {
    *why = "nginx is not installed (apt-get install nginx-light)";
    return nullptr;
  }
  auto s = std::unique_ptr<NginxServer>(new NginxServer());
  const std::string d = s->dir_.path();
  auto argv = [&](int port) {
    // One process (master_process off), everything it writes inside the temp dir. Connections
    // live long (keepalive_requests) so the access log's connection serials count client
    // connections, not nginx's recycling.
    WriteFile(d + "/nginx.conf",
              "daemon off;\nmaster_process off;\npid " + d + "/nginx.pid;\nerror_log " + d +
                  "/error.log;\nevents { worker_connections 256; }\nhttp {\n"
                  "  default_type application/octet-stream;\n"
                  "  log_format conns '$connection $status $request_uri';\n"
                  "  access_log " + d + "/access.log conns;\n"
                  "  client_body_temp_path " + d + "/body;\n  proxy_temp_path " + d + "/proxy;\n"
                  "  fastcgi_temp_path " + d + "/fastcgi;\n  uwsgi_temp_path " + d + "/uwsgi;\n"
                  "  scgi_temp_path " + d + "/scgi;\n"
                  "  keepalive_requests 1000000;\n  keepalive_timeout 120s;\n"
                  "  server {\n    listen 127.0.0.1:" + std::to_string(port) + ";\n"
                  "    root " + root + ";\n  }\n}\n");
    return std::vector<std::string>{nginx, "-p", d, "-c", d + "/nginx.conf", "-e",
                                    d + "/error.log"};
  };
  if (!s->StartOnFreePort("nginx", argv, "stdout.log", "error.log", 10000, why)) return nullptr;
  return s;
}

std::string NginxServer::AccessLog() const { return ReadFile(dir_.path() + "/access.log"); }

size_t NginxServer::SettledRequests(const std::string& part) const {
  auto count = [&] {
    size_t n = 0;
    std::istringstream in(AccessLog());
    for (std::string line; std::getline(in, line);) n += line.find(part) != std::string::npos;
    return n;
  };
  size_t n = count();
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const size_t again = count();
    if (again == n) break;
    n = again;
  }
  return n;
}

std::unique_ptr<PythonHttpServer> PythonHttpServer::Start(const std::string& root,
                                                         std::string* why) {
  if (!HasCommand("python3")) {
    *why = "python3 is not installed";
    return nullptr;
  }
  auto s = std::unique_ptr<PythonHttpServer>(new PythonHttpServer());
  auto argv = [&](int port) {
    return std::vector<std::string>{"python3", "-m", "http.server", "--bind", "127.0.0.1",
                                    "--directory", root, std::to_string(port)};
  };
  if (!s->StartOnFreePort("python3 -m http.server", argv, "log", "log", 10000, why)) {
    return nullptr;
  }
  return s;
}

std::unique_ptr<FaultServer> FaultServer::Start(const std::string& root, std::string* why) {
  if (!HasCommand("python3")) {
    *why = "python3 is not installed";
    return nullptr;
  }
  auto s = std::unique_ptr<FaultServer>(new FaultServer());
  const std::string d = s->dir_.path();
  if (!s->proc_.Start({"python3", SourceDir() + "/tests/support/fault_server.py", root,
                       d + "/port"},
                      d + "/log")) {
    *why = "cannot start fault_server.py";
    return nullptr;
  }
  for (int i = 0; i < 500; ++i) {
    if (::access((d + "/port").c_str(), R_OK) == 0) {
      s->port_ = std::stoi(ReadFile(d + "/port"));
      if (WaitForPort(s->port_, 10000)) return s;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *why = "fault_server.py did not come up: " + ReadFile(d + "/log");
  return nullptr;
}

std::unique_ptr<MotoServer> MotoServer::Start(std::string* why) {
  if (!HasCommand("moto_server") ||
      Run({"python3", "-c", "import moto, boto3"}).exit_code != 0) {
    *why = "moto_server / boto3 are not installed (pip install 'moto[server]' boto3)";
    return nullptr;
  }
  auto s = std::unique_ptr<MotoServer>(new MotoServer());
  auto argv = [](int port) {
    return std::vector<std::string>{"moto_server", "-H", "127.0.0.1", "-p",
                                    std::to_string(port)};
  };
  if (!s->StartOnFreePort("moto_server", argv, "moto.log", "moto.log", 30000, why)) {
    return nullptr;
  }
  return s;
}

std::string MotoServer::Python(const std::string& code) const {
  std::string prelude =
      "import boto3, json, sys, urllib.request\n"
      "EP = '" + endpoint() + "'\n"
      "kw = dict(endpoint_url=EP, region_name='us-east-1', aws_access_key_id='testing',\n"
      "          aws_secret_access_key='testing')\n"
      "s3 = boto3.client('s3', **kw)\n"
      "iam = boto3.client('iam', **kw)\n";
  RunResult r = Run({"python3", "-c", prelude + code});
  if (r.exit_code != 0) throw std::runtime_error("python (boto3 on moto) failed:\n" + r.err);
  return r.out;
}

MotoServer::Credentials MotoServer::SetUpWithUser(const std::string& setup) const {
  const std::string out = Python(
      setup +
      "\niam.create_user(UserName='packfs')\n"
      "iam.put_user_policy(UserName='packfs', PolicyName='all', PolicyDocument=json.dumps(\n"
      "    {'Version': '2012-10-17', 'Statement': [\n"
      "        {'Effect': 'Allow', 'Action': 's3:*', 'Resource': '*'}]}))\n"
      "k = iam.create_access_key(UserName='packfs')['AccessKey']\n"
      "print('\\npackfs-key', k['AccessKeyId'], k['SecretAccessKey'])\n");
  const size_t at = out.rfind("packfs-key ");
  if (at == std::string::npos) throw std::runtime_error("moto: no access key in:\n" + out);
  std::istringstream in(out.substr(at + 11));
  Credentials c;
  in >> c.key >> c.secret;
  if (c.secret.empty()) throw std::runtime_error("moto: no access key in:\n" + out);
  return c;
}

void MotoServer::SetAuth(bool on) const {
  // Plain urllib: importing boto3 costs seconds on a busy machine.
  RunResult r = Run({"python3", "-c",
                     "import urllib.request\n"
                     "urllib.request.urlopen(urllib.request.Request('" + endpoint() +
                         "/moto-api/reset-auth', data=b'" + (on ? "0" : "inf") +
                         "', headers={'Content-Type': 'text/plain'}, method='POST')).read()\n"});
  if (r.exit_code != 0) throw std::runtime_error("moto reset-auth failed:\n" + r.err);
}

}  // namespace packfs::testing
