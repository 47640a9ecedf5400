// Shared helpers for packfs tests: temporary directories, running programs, file I/O, hashing.
// Not thread-safe unless stated; each test owns its TempDir.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace packfs::testing {

// Absolute path of tests/fixtures in the source tree (read-only: copy before changing).
std::string FixturesDir();
// Directory holding the built programs (mkpack, packfs).
std::string BinaryDir();
std::string MkpackPath();
std::string PackfsPath();

// A fresh directory under $TMPDIR (or /tmp), removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  // Under `base` instead of $TMPDIR or /tmp (empty: the default).
  explicit TempDir(const std::string& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// "/dev/shm" when it is a tmpfs with `bytes` free and the machine has twice that in available
// memory, else "" (the default temporary directory). For tests that write gigabytes only to read
// them back: in memory they do not wait on the disk, nor make the other tests wait.
std::string RamTempBase(uint64_t bytes);

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;     // stdout
  std::string err;     // stderr
};
// Runs argv (no shell), capturing stdout and stderr; optional stdin text.
RunResult Run(const std::vector<std::string>& argv, const std::string& stdin_text = "");
// Runs a shell command line with /bin/sh -c.
RunResult Sh(const std::string& command);

std::string ReadFile(const std::string& path);
// Reads a whole file with open(2) and read(2) (as a program reading a mount does) into *out;
// returns the errno of the first failure (e.g. EIO from a mount), 0 on success.
int ReadWithErrno(const std::string& path, std::string* out);
void WriteFile(const std::string& path, const std::string& content);  // creates parent dirs
std::vector<uint8_t> ReadBytes(const std::string& path);
// Lowercase hex SHA-256 of a file's contents (via `sha256sum`).
std::string Sha256File(const std::string& path);
// Parses a `sha256sum`-style list ("<hex>  <key>" per line; keys may hold tabs and non-ASCII
// bytes) into key -> hex, e.g. a fixture's sha256.txt.
std::map<std::string, std::string> ReadSha256List(const std::string& path);
// Deterministic pseudo-random bytes.
std::string RandomBytes(size_t n, uint64_t seed);
bool HasCommand(const std::string& name);
// Flips bits of the byte at `offset` of file `path` in place, keeping its size and its access
// and modification times (so only a checksum can tell); false when it could not.
bool FlipByteKeepingTimes(const std::string& path, uint64_t offset);

}  // namespace packfs::testing
