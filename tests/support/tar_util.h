// Helpers for tests over tar shards: a source tree exercising the tar formats' corner cases
// (names over 100 and 255 bytes, a hard link, empty files, a symlink, WebDataset samples), tars
// of it made by real GNU tar and Python's tarfile, and what `tar -xf` extracts from a tar.
// Not thread-safe; every call runs external programs.
#pragma once

#include <map>
#include <string>

namespace packfs::testing {

// Fills `dir` with the test tree. With `over_255`, one path is longer than 255 bytes (which
// --format=ustar cannot store). Hard link: "links/hard.bin" -> "samples/000001.jpg"; symlink:
// "links/soft".
void MakeTarSourceTree(const std::string& dir, bool over_255);

// Tars `tree` into `out`. `how`: "gnu", "posix", "ustar" (GNU tar --format=..., members "./x"),
// or "python" (tarfile PAX_FORMAT, float mtimes, a pax header per member as WebDataset writes).
void MakeTar(const std::string& tree, const std::string& out, const std::string& how);

// Extracts `tar` into `dir` with `tar -xf` and returns every regular file: key -> sha256 hex.
std::map<std::string, std::string> ExtractedSha256(const std::string& tar, const std::string& dir);

// sha256 of every regular file under `root` (a mount, an extraction): key -> sha256 hex.
std::map<std::string, std::string> TreeSha256(const std::string& root);

}  // namespace packfs::testing
