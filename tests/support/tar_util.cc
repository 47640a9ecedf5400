// Tar test helpers (see tar_util.h).
#include "tests/support/tar_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/test_util.h"

namespace packfs::testing {

void MakeTarSourceTree(const std::string& dir, bool over_255) {
  WriteFile(dir + "/samples/000000.jpg", RandomBytes(30000, 10));
  WriteFile(dir + "/samples/000000.json", "{\"label\": 0}");
  WriteFile(dir + "/samples/000000.cls", "0");
  WriteFile(dir + "/samples/000001.jpg", RandomBytes(4097, 11));
  WriteFile(dir + "/samples/000001.json", "{\"label\": 1}");
  WriteFile(dir + "/samples/000001.seg.png", RandomBytes(512, 12));
  WriteFile(dir + "/empty.txt", "");
  WriteFile(dir + "/top level.bin", RandomBytes(100000, 13));
  // 150 bytes: over ustar's 100-byte name field, splittable into prefix + name.
  std::string long_dir = std::string(60, 'd');
  WriteFile(dir + "/" + long_dir + "/" + std::string(80, 'n') + ".txt", "long name");
  if (over_255) {
    std::string deep = std::string(120, 'a') + "/" + std::string(120, 'b');
    WriteFile(dir + "/" + deep + "/" + std::string(100, 'c') + ".bin", RandomBytes(777, 14));
  }
  ::mkdir((dir + "/links").c_str(), 0755);
  EXPECT_EQ(::link((dir + "/samples/000001.jpg").c_str(), (dir + "/links/hard.bin").c_str()), 0);
  EXPECT_EQ(::symlink("../samples/000000.cls", (dir + "/links/soft").c_str()), 0);
}

void MakeTar(const std::string& tree, const std::string& out, const std::string& how) {
  std::filesystem::create_directories(std::filesystem::path(out).parent_path());
  RunResult r;
  if (how == "python") {
    r = Run({"python3", "-c",
             "import os, sys, tarfile\n"
             "root, out = sys.argv[1], sys.argv[2]\n"
             "with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:\n"
             "    for d, dirs, files in os.walk(root):\n"
             "        dirs.sort()\n"
             "        for f in sorted(files):\n"
             "            p = os.path.join(d, f)\n"
             "            ti = t.gettarinfo(p, os.path.relpath(p, root))\n"
             "            ti.mtime = 1700000000.25\n"
             "            if ti.isreg():\n"
             "                with open(p, 'rb') as fh: t.addfile(ti, fh)\n"
             "            else:\n"
             "                t.addfile(ti)\n",
             tree, out});
  } else {
    r = Run({"tar", "--format=" + how, "--sort=name", "-cf", out, "-C", tree, "."});
  }
  ASSERT_EQ(r.exit_code, 0) << how << ": " << r.err;
}

std::map<std::string, std::string> TreeSha256(const std::string& root) {
  TempDir tmp;
  RunResult r = Sh("cd '" + root + "' && find . -type f -print0 | sort -z | xargs -0 -r sha256sum" +
                   " > '" + tmp.path() + "/sums'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> out;
  for (auto& [k, v] : ReadSha256List(tmp.path() + "/sums")) {
    out[k.starts_with("./") ? k.substr(2) : k] = v;
  }
  return out;
}

std::map<std::string, std::string> ExtractedSha256(const std::string& tar, const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  RunResult r = Run({"tar", "-xf", tar, "-C", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return TreeSha256(dir);
}

}  // namespace packfs::testing
