// Helpers shared by mkpack subcommands: opening pack sets with reported warnings, number
// formatting, and a small parallel-for. Not thread-safe unless stated.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/pack_set.h"
#include "core/status.h"

namespace packfs::mkpack {

// Prints "mkpack <cmd>: <status message>" to stderr.
void PrintError(const char* cmd, const Status& st);
void PrintWarning(const char* cmd, const std::string& msg);

// Opens a pack set; prints its warnings to stderr.
Result<std::unique_ptr<PackSet>> OpenPackSetForCli(const char* cmd, const std::string& dir,
                                                   const PackSetOptions& opts = {});

// "1.23 GB", "456 kB" (SI units).
std::string HumanBytes(uint64_t bytes);
// "%08x".
std::string Hex32(uint32_t v);

// Runs fn(i) for i in [0, n) on `threads` threads (0: one per core). Thread-safe fn required.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace packfs::mkpack
