// mkpack: writes, checks, lists, unpacks and resolves packfs pack sets.
#include <cstdio>
#include <string>
#include <string_view>

#include "git_rev.h"
#include "mkpack/commands.h"

namespace {

// "pack, convert-wds, ...": the subcommands in the order --help lists them.
std::string CommandList(CLI::App& app) {
  std::string s;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    s += (s.empty() ? "" : ", ") + sub->get_name();
  }
  return s;
}

// Checks the command word before CLI11 sees it: CLI11 answers an unknown one with "A subcommand
// is required", which sends the user looking for the wrong mistake. Returns false after printing
// what is wrong. Top-level arguments are only flags (--help, --version), so the first word not
// starting with '-' is the command.
bool CheckCommandWord(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      if (sub->get_name() == arg) return true;
    }
    std::fprintf(stderr, "mkpack: unknown command '%s'; the commands are: %s (see mkpack --help)\n",
                 argv[i], CommandList(app).c_str());
    return false;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "--version") return true;
  }
  std::fprintf(stderr, "mkpack: a command is required: %s (see mkpack --help)\n",
               CommandList(app).c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mkpack: write and check packfs pack sets (STORED zip shards + SQLite catalog)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("mkpack ") + PACKFS_VERSION + " (git " +
                                        PACKFS_GIT_REV + ")");
  int exit_code = packfs::mkpack::kExitOk;
  packfs::mkpack::RegisterPack(app, &exit_code);
  packfs::mkpack::RegisterCatalog(app, &exit_code);
  packfs::mkpack::RegisterVerify(app, &exit_code);
  packfs::mkpack::RegisterLs(app, &exit_code);
  packfs::mkpack::RegisterUnpack(app, &exit_code);
  packfs::mkpack::RegisterResolve(app, &exit_code);
  packfs::mkpack::RegisterConvertWds(app, &exit_code);
  packfs::mkpack::RegisterConvertLeRobot(app, &exit_code);
  if (!CheckCommandWord(app, argc, argv)) return packfs::mkpack::kExitError;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : packfs::mkpack::kExitError;
  }
  return exit_code;
}
