// `mkpack unpack DIR OUT`: writes every member as a file under OUT, byte-identical.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/open/open_source.h"
#include "core/read/unpack.h"
#include "mkpack/cli_util.h"
#include "mkpack/commands.h"

namespace packfs::mkpack {

void RegisterUnpack(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    std::string out;
    bool force = false;
    int jobs = 0;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "unpack",
      "Extract every member of a pack set under OUT (byte-identical, CRC-checked). Never writes "
      "outside OUT, never through a symlink; refuses to overwrite without --force.");
  cmd->add_option("dir", opts->dir, "pack directory")->required();
  cmd->add_option("out", opts->out, "output directory (created if missing)")->required();
  cmd->add_flag("-f,--force", opts->force, "replace existing files");
  cmd->add_option("-j,--jobs", opts->jobs, "files written in parallel (default: one per core)");
  cmd->callback([opts, exit_code] {
    // A local pack directory only (a URL is taken for a path).
    auto ps = OpenSourceSet(SourceLocation{opts->dir, {}}, OpenSourceOptions{});
    if (!ps.ok()) {
      PrintError("unpack", ps.status());
      *exit_code = kExitError;
      return;
    }
    // Members refused while indexing are reported once, below, as skipped; the other warnings
    // (a stale catalog) only here.
    const auto& refused = (*ps)->catalog().problems();
    for (const auto& w : (*ps)->warnings()) {
      if (std::find(refused.begin(), refused.end(), w) == refused.end()) PrintWarning("unpack", w);
    }
    auto t0 = std::chrono::steady_clock::now();
    auto rep = UnpackPackSet(**ps, opts->out, UnpackOptions{opts->force, opts->jobs});
    if (!rep.ok()) {
      PrintError("unpack", rep.status());
      *exit_code = kExitError;
      return;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& p : rep->problems) std::fprintf(stderr, "mkpack unpack: skipped: %s\n", p.c_str());
    std::fprintf(stderr, "unpacked %llu files, %s into %s in %.2f s%s\n",
                 (unsigned long long)rep->files, HumanBytes(rep->bytes).c_str(), opts->out.c_str(),
                 secs, rep->problems.empty() ? "" : " (some members skipped, see above)");
    *exit_code = rep->problems.empty() ? kExitOk : kExitProblems;
  });
}

}  // namespace packfs::mkpack
