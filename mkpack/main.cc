// mkpack: writes, checks, lists, unpacks and resolves packfs pack sets.
#include <cstdio>

#include "git_rev.h"
#include "mkpack/commands.h"

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : packfs::mkpack::kExitError;
  }
  return exit_code;
}
