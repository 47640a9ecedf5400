// Tests of the pack pipeline (core/pack/pack_pipeline.h) without the CLI: real files walked into
// inputs, shards checked with the zip reader and the catalog; dry runs write nothing; append and
// resume keep every shard written before; a stopped run keeps its complete shards.
#include "core/pack/pack_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <span>

#include "core/base/shard_source.h"
#include "core/catalog/catalog.h"
#include "core/format/zip_reader.h"
#include "core/write/file_walk.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr size_t kFiles = 24;

// kFiles files of 3000 bytes or so under `root` ("d0/f00.bin", ...); key -> content.
std::map<std::string, std::string> MakeTree(const std::string& root) {
  std::map<std::string, std::string> files;
  for (size_t i = 0; i < kFiles; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "d%zu/f%02zu.bin", i % 3, i);
    files[key] = testing::RandomBytes(2000 + 97 * i, i + 1);
    testing::WriteFile(root + "/" + key, files[key]);
  }
  return files;
}

std::vector<PackInput> Walk(const std::string& root) {
  auto list = WalkTree(root, WalkOptions{});
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  return list.ok() ? std::move(list->inputs) : std::vector<PackInput>{};
}

// Small shards (several per tree), no fsync.
PackJob Job(const std::string& dir, std::vector<PackInput> inputs) {
  PackJob job;
  job.dir = dir;
  job.inputs = std::move(inputs);
  job.options.max_pack_bytes = 16 * 1024;
  job.options.sync = false;
  job.options.jobs = 2;
  return job;
}

// Every member of every shard of `dir`, read back with the zip reader: key -> content. Fails the
// test on a key in two shards.
std::map<std::string, std::string> ReadShards(const std::string& dir) {
  std::map<std::string, std::string> out;
  auto state = ScanPackDir(dir);
  EXPECT_TRUE(state.ok()) << state.status().ToString();
  if (!state.ok()) return out;
  for (const std::string& name : state->shards) {
    auto src = FileShardSource::Open(dir + "/" + name, name);
    EXPECT_TRUE(src.ok()) << src.status().ToString();
    if (!src.ok()) continue;
    auto index = ReadZipIndex(**src);
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    if (!index.ok()) continue;
    EXPECT_TRUE(index->problems.empty()) << name;
    for (const ShardMember& m : index->members) {
      std::string bytes(m.size, '\0');
      auto got = (*src)->ReadAt(
          m.data_offset, std::span<uint8_t>(reinterpret_cast<uint8_t*>(bytes.data()), m.size));
      EXPECT_TRUE(got.ok() && *got == m.size) << name << " " << m.name;
      EXPECT_TRUE(out.emplace(m.name, bytes).second) << m.name << " is in two shards";
    }
  }
  return out;
}

// key -> shard name, from the catalog of `dir`.
std::map<std::string, std::string> CatalogKeys(const std::string& dir) {
  std::map<std::string, std::string> out;
  auto cat = Catalog::Open(dir + "/" + kCatalogFileName);
  EXPECT_TRUE(cat.ok()) << cat.status().ToString();
  if (!cat.ok()) return out;
  Status st = (*cat)->ForEachFile([&](const std::string& key, const Node& n) {
    auto shard = (*cat)->Shard(n.shard);
    if (!shard.ok()) return shard.status();
    out[key] = (*shard)->name;
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::vector<std::string> DirNames(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(PackPipelineTest, WritesShardsAndCatalogOfANewDirectory) {
  TempDir tmp;
  const auto files = MakeTree(tmp / "src");
  PackJob job = Job(tmp / "a/b/media", Walk(tmp / "src"));
  job.catalog_from_writer = true;
  job.create_parents = true;
  std::vector<std::string> seen;
  uint64_t last_files = 0;
  PackEvents ev;
  ev.planned = [&](const PackSummary& s) {
    seen.push_back("planned");
    EXPECT_FALSE(fs::exists(tmp / "a")) << "nothing is created before the plan is reported";
    EXPECT_EQ(s.inputs.size(), kFiles);
  };
  ev.writing = [&](const PackSummary&) -> const std::atomic<int>* {
    seen.push_back("writing");
    EXPECT_TRUE(fs::is_directory(tmp / "a/b/media"));
    return nullptr;
  };
  ev.progress = [&](const WriteProgress& p) { last_files = p.files; };
  ev.write_ended = [&] { seen.push_back("write_ended"); };
  ev.shards_complete = [&](const PackSummary& s) {
    seen.push_back("shards_complete");
    EXPECT_TRUE(s.written);
    EXPECT_FALSE(fs::exists(tmp / "a/b/media/" + kCatalogFileName))
        << "the command's files come before the catalog";
    return Status::OK();
  };
  auto run = RunPackJob(std::move(job), ev);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(seen, (std::vector<std::string>{"planned", "writing", "write_ended",
                                            "shards_complete"}));
  const PackSummary& s = *run;
  EXPECT_TRUE(s.written);
  EXPECT_EQ(s.stopped, 0);
  EXPECT_TRUE(s.resumed.empty());
  EXPECT_GE(s.plan.shards.size(), 3u);
  EXPECT_EQ(s.done.shards, s.plan.shards.size());
  EXPECT_EQ(last_files, kFiles);

  const std::string dir = tmp / "a/b/media";
  EXPECT_EQ(ReadShards(dir), files);
  std::vector<std::string> expected;
  for (const PlannedShard& ps : s.plan.shards) {
    expected.push_back(ps.name);
    EXPECT_EQ(fs::file_size(dir + "/" + ps.name), ps.bytes) << "the plan is exact";
  }
  expected.push_back(kCatalogFileName);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(DirNames(dir), expected) << "no temp shards are left";
  const auto cat = CatalogKeys(dir);
  EXPECT_EQ(cat.size(), kFiles);
  for (const PlannedShard& ps : s.plan.shards) {
    for (size_t m : ps.members) EXPECT_EQ(cat.at(s.inputs[m].key), ps.name);
  }
}

TEST(PackPipelineTest, DryRunPlansAndWritesNothing) {
  TempDir tmp;
  MakeTree(tmp / "src");
  PackJob job = Job(tmp / "out/media", Walk(tmp / "src"));
  job.dry_run = true;
  job.create_parents = true;
  int planned = 0;
  PackEvents ev;
  ev.planned = [&](const PackSummary&) { ++planned; };
  ev.writing = [&](const PackSummary&) -> const std::atomic<int>* {
    ADD_FAILURE() << "a dry run does not write";
    return nullptr;
  };
  auto run = RunPackJob(std::move(job), ev);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(planned, 1);
  EXPECT_FALSE(run->written);
  EXPECT_EQ(run->inputs.size(), kFiles);
  EXPECT_GE(run->plan.shards.size(), 3u);
  EXPECT_EQ(run->plan.shards[0].name, "pack-0000.zip");
  EXPECT_FALSE(fs::exists(tmp / "out"));

  // Into an existing set, a dry run plans after its last shard and changes nothing.
  ASSERT_TRUE(RunPackJob(Job(tmp / "set", Walk(tmp / "src"))).ok());
  const std::vector<std::string> before = DirNames(tmp / "set");
  const uint64_t next = ScanPackDir(tmp / "set")->next_index;
  TempDir more;
  testing::WriteFile(more / "new.txt", "new");
  PackJob again = Job(tmp / "set", Walk(more.path()));
  again.policy = TargetPolicy::kAppend;
  again.dry_run = true;
  auto planned_append = RunPackJob(std::move(again));
  ASSERT_TRUE(planned_append.ok()) << planned_append.status().ToString();
  ASSERT_EQ(planned_append->plan.shards.size(), 1u);
  EXPECT_EQ(planned_append->plan.shards[0].index, next);
  EXPECT_EQ(DirNames(tmp / "set"), before);
}

TEST(PackPipelineTest, NewPoliciesRefuseADirectoryThatHoldsShards) {
  TempDir tmp;
  MakeTree(tmp / "src");
  ASSERT_TRUE(RunPackJob(Job(tmp / "media", Walk(tmp / "src"))).ok());
  const std::vector<std::string> before = DirNames(tmp / "media");

  auto fresh = RunPackJob(Job(tmp / "media", Walk(tmp / "src")));
  ASSERT_FALSE(fresh.ok());
  EXPECT_EQ(fresh.status().code(), Code::kAlreadyExists);
  EXPECT_NE(fresh.status().message().find("--append"), std::string::npos);

  PackJob convert = Job(tmp / "media", Walk(tmp / "src"));
  convert.policy = TargetPolicy::kNewOnly;
  auto refused = RunPackJob(std::move(convert));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("empty or new directory"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(DirNames(tmp / "media"), before);
}

TEST(PackPipelineTest, AppendAddsShardsAfterTheOthersAndRefusesKnownKeys) {
  TempDir tmp;
  const auto files = MakeTree(tmp / "src");
  std::vector<PackInput> all = Walk(tmp / "src");
  std::vector<PackInput> first(all.begin(), all.begin() + kFiles / 2);
  std::vector<PackInput> second(all.begin() + kFiles / 2, all.end());
  const std::string dir = tmp / "media";
  auto one = RunPackJob(Job(dir, first));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  std::map<std::string, std::string> kept;
  for (const PlannedShard& ps : one->plan.shards) {
    kept[ps.name] = testing::ReadFile(dir + "/" + ps.name);
  }

  // A key the set already holds: refused before anything is written.
  PackJob dup = Job(dir, {all[0], all.back()});
  dup.policy = TargetPolicy::kAppend;
  auto refused = RunPackJob(std::move(dup));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kAlreadyExists);
  EXPECT_NE(refused.status().message().find(one->plan.shards[0].name), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(ScanPackDir(dir)->shards.size(), one->plan.shards.size());

  PackJob job = Job(dir, second);
  job.policy = TargetPolicy::kAppend;
  auto two = RunPackJob(std::move(job));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->target.shards.size(), one->plan.shards.size());
  EXPECT_EQ(two->plan.shards[0].index, one->plan.shards.size()) << "numbered after the others";
  for (const auto& [name, bytes] : kept) {
    EXPECT_EQ(testing::ReadFile(dir + "/" + name), bytes) << name << " was rewritten";
  }
  EXPECT_EQ(ReadShards(dir), files);
  EXPECT_EQ(CatalogKeys(dir).size(), kFiles) << "the catalog is refreshed with the new shards";
}

TEST(PackPipelineTest, AStoppedRunKeepsItsCompleteShardsAndResumeFinishesIt) {
  TempDir tmp;
  const auto files = MakeTree(tmp / "src");
  const std::string dir = tmp / "media";
  std::atomic<int> stop{0};
  PackJob job = Job(dir, Walk(tmp / "src"));
  job.catalog_from_writer = true;
  PackEvents ev;
  ev.writing = [&](const PackSummary&) { return &stop; };
  ev.progress = [&](const WriteProgress& p) {
    if (p.shards == 2) stop = 7;
  };
  ev.shards_complete = [&](const PackSummary&) {
    ADD_FAILURE() << "a stopped run is not complete";
    return Status::OK();
  };
  auto stopped = RunPackJob(std::move(job), ev);
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(stopped->stopped, 7);
  EXPECT_FALSE(stopped->written);
  ASSERT_EQ(stopped->done.shards, 2u);
  ASSERT_GT(stopped->plan.shards.size(), 3u);
  EXPECT_FALSE(fs::exists(dir + "/" + kCatalogFileName));
  const PackDirState after_stop = *ScanPackDir(dir);
  ASSERT_EQ(after_stop.shards.size(), 2u);
  std::map<std::string, std::string> kept;
  size_t packed = 0;
  for (size_t i = 0; i < 2; ++i) {
    const PlannedShard& ps = stopped->plan.shards[i];
    kept[ps.name] = testing::ReadFile(dir + "/" + ps.name);
    packed += ps.members.size();
  }

  // Without --resume the leftovers are refused.
  auto refused = RunPackJob(Job(dir, Walk(tmp / "src")));
  EXPECT_FALSE(refused.ok());

  PackJob resume = Job(dir, Walk(tmp / "src"));
  resume.policy = TargetPolicy::kResume;
  resume.catalog_from_writer = true;
  auto done = RunPackJob(std::move(resume));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->resumed.size(), packed);
  EXPECT_EQ(done->inputs.size(), kFiles - packed);
  EXPECT_EQ(done->plan.shards[0].index, 2u);
  for (const auto& [name, bytes] : kept) {
    EXPECT_EQ(testing::ReadFile(dir + "/" + name), bytes) << name << " was rewritten";
  }
  EXPECT_TRUE(ScanPackDir(dir)->temps.empty()) << "resume removes the unfinished shard";
  EXPECT_EQ(ReadShards(dir), files);
  EXPECT_EQ(CatalogKeys(dir).size(), kFiles);
}

TEST(PackPipelineTest, ResumeRefusesToLoseMembersOfShardsTheCatalogListsButAreGone) {
  TempDir tmp;
  const auto files = MakeTree(tmp / "src");
  const std::string dir = tmp / "media";
  auto one = RunPackJob(Job(dir, Walk(tmp / "src")));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  const PlannedShard& lost = one->plan.shards[0];
  fs::remove(dir + "/" + lost.name);

  // The inputs without the lost shard's members: a refresh would drop them.
  std::vector<PackInput> rest = Walk(tmp / "src");
  std::erase_if(rest, [&](const PackInput& in) {
    for (size_t m : lost.members) {
      if (one->inputs[m].key == in.key) return true;
    }
    return false;
  });
  PackJob partial = Job(dir, rest);
  partial.policy = TargetPolicy::kResume;
  auto refused = RunPackJob(std::move(partial));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kStale);
  EXPECT_NE(refused.status().message().find("--forget-missing"), std::string::npos)
      << refused.status().message();

  // Packing them again is fine: the catalog forgets the lost shard, its members are new.
  PackJob full = Job(dir, Walk(tmp / "src"));
  full.policy = TargetPolicy::kResume;
  auto done = RunPackJob(std::move(full));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->inputs.size(), lost.members.size());
  EXPECT_EQ(ReadShards(dir), files);
  const auto cat = CatalogKeys(dir);
  EXPECT_EQ(cat.size(), kFiles);
  for (const auto& [key, shard] : cat) EXPECT_NE(shard, lost.name) << key;
}

TEST(PackPipelineTest, ErrorsOfTheCommandsFilesAndOfTheTargetEndTheRun) {
  TempDir tmp;
  MakeTree(tmp / "src");
  PackEvents ev;
  ev.shards_complete = [](const PackSummary&) { return Status::IOError("index failed"); };
  auto failed = RunPackJob(Job(tmp / "media", Walk(tmp / "src")), ev);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "index failed");
  EXPECT_FALSE(fs::exists(tmp / "media/" + kCatalogFileName));

  // Without create_parents only the target itself is made.
  auto no_parent = RunPackJob(Job(tmp / "x/y/media", Walk(tmp / "src")));
  ASSERT_FALSE(no_parent.ok());
  EXPECT_NE(no_parent.status().message().find("cannot create"), std::string::npos)
      << no_parent.status().message();
  EXPECT_FALSE(fs::exists(tmp / "x"));
}

}  // namespace
}  // namespace packfs
