// Subcommand registration for the mkpack CLI. Each subcommand lives in its own cmd_<name>.cc and
// adds itself to the CLI11 app; the callback stores the exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace packfs::mkpack {

// Exit codes shared by all subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitProblems = 1;  // the command ran and found problems (verify, missing files)
inline constexpr int kExitError = 2;     // usage or I/O error

void RegisterPack(CLI::App& app, int* exit_code);
void RegisterCatalog(CLI::App& app, int* exit_code);
void RegisterVerify(CLI::App& app, int* exit_code);
void RegisterLs(CLI::App& app, int* exit_code);
void RegisterUnpack(CLI::App& app, int* exit_code);
void RegisterResolve(CLI::App& app, int* exit_code);
void RegisterConvertWds(CLI::App& app, int* exit_code);
void RegisterConvertLeRobot(CLI::App& app, int* exit_code);

}  // namespace packfs::mkpack
