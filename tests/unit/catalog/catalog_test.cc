// Tests of the SQLite catalog: BuildNodes' id layout and conflict checks, the write/open round
// trip, in-memory catalogs, damaged files, atomic replacement and concurrent readers.
#include "core/catalog/catalog.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "core/catalog/sqlite_util.h"
#include "core/read/pack_set.h"
#include "tests/support/test_util.h"

namespace packfs {
namespace {

ShardMember M(std::string name, uint64_t size, uint64_t lho = 0) {
  ShardMember m;
  m.name = std::move(name);
  m.size = size;
  m.local_header_offset = lho;
  m.data_offset = lho + 30 + m.name.size();
  m.crc32 = static_cast<uint32_t>(size * 7 + 1);
  m.mode = 0100644;
  m.mtime = 1700000000 + static_cast<int64_t>(size);
  return m;
}

ShardContent Shard(std::string name, std::vector<ShardMember> members) {
  ShardContent s;
  s.info.name = std::move(name);
  s.info.size = 1000;
  s.info.mtime_ns = 123456789;
  s.index.members = std::move(members);
  s.index.fingerprint = 0xfeedfacecafebeefULL;
  return s;
}

std::vector<ShardContent> SampleShards() {
  std::vector<ShardContent> v;
  v.push_back(Shard("pack-0000.zip", {M("b/2.bin", 2), M("a.txt", 1), M("b/1.bin", 3),
                                      M("b/c/deep.bin", 4)}));
  auto s1 = Shard("pack-0001.zip", {M("b/0.bin", 5), M("z", 0), M("B", 6)});
  s1.index.problems.push_back("pack-0001.zip: member bad.bin: compressed");
  v.push_back(std::move(s1));
  return v;
}

TEST(BuildNodesTest, BreadthFirstIdsWithChildrenInByteOrder) {
  auto data = BuildNodes(SampleShards());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  const auto& n = data->nodes;
  // root: B a.txt b z   (byte order: 'B' < 'a' < 'b' < 'z')
  ASSERT_EQ(n.size(), 10u);
  for (size_t i = 0; i < n.size(); ++i) EXPECT_EQ(n[i].id, i + 1);
  EXPECT_EQ(n[0].parent, kRootId);
  EXPECT_EQ(n[0].first_child, 2u);
  EXPECT_EQ(n[0].child_count, 4u);
  EXPECT_EQ(n[1].name, "B");
  EXPECT_EQ(n[2].name, "a.txt");
  EXPECT_EQ(n[3].name, "b");
  EXPECT_EQ(n[4].name, "z");
  EXPECT_TRUE(n[3].is_dir());
  // b's children: 0.bin 1.bin 2.bin c
  EXPECT_EQ(n[3].first_child, 6u);
  EXPECT_EQ(n[3].child_count, 4u);
  EXPECT_EQ(n[5].name, "0.bin");
  EXPECT_EQ(n[5].shard, 1u);
  EXPECT_EQ(n[6].name, "1.bin");
  EXPECT_EQ(n[7].name, "2.bin");
  EXPECT_EQ(n[8].name, "c");
  EXPECT_EQ(n[8].first_child, 10u);
  EXPECT_EQ(n[9].name, "deep.bin");
  EXPECT_EQ(n[9].parent, 9u);
  EXPECT_EQ(n[9].size, 4u);
  EXPECT_EQ(data->totals.files, 7u);
  EXPECT_EQ(data->totals.directories, 3u);
  EXPECT_EQ(data->totals.bytes, 21u);
  ASSERT_EQ(data->shards.size(), 2u);
  EXPECT_EQ(data->shards[1].id, 1u);
  EXPECT_EQ(data->shards[1].member_count, 3u);
  EXPECT_EQ(data->shards[0].fingerprint, 0xfeedfacecafebeefULL);
  ASSERT_EQ(data->problems.size(), 1u);
  EXPECT_EQ(data->problem_shards[0], "pack-0001.zip");
  EXPECT_EQ(n[8].mtime, 1700000004);  // directories carry the newest mtime below them
}

TEST(BuildNodesTest, EmptySetHasOnlyTheRoot) {
  auto data = BuildNodes({Shard("pack-0000.zip", {})});
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->nodes.size(), 1u);
  EXPECT_EQ(data->nodes[0].child_count, 0u);
  EXPECT_EQ(data->totals.directories, 1u);
}

TEST(BuildNodesTest, KeyInTwoShardsNamesBoth) {
  std::vector<ShardContent> v;
  v.push_back(Shard("pack-0000.zip", {M("x/same.bin", 1)}));
  v.push_back(Shard("pack-0001.zip", {M("other", 1)}));
  v.push_back(Shard("pack-0002.zip", {M("x/same.bin", 2)}));
  auto data = BuildNodes(std::move(v));
  ASSERT_FALSE(data.ok());
  const std::string& msg = data.status().message();
  EXPECT_NE(msg.find("x/same.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pack-0000.zip"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pack-0002.zip"), std::string::npos) << msg;
}

TEST(BuildNodesTest, FileThatIsAlsoADirectoryIsRefused) {
  for (bool file_first : {true, false}) {
    std::vector<ShardContent> v;
    v.push_back(Shard("pack-0000.zip", {M(file_first ? "a" : "a/b", 1)}));
    v.push_back(Shard("pack-0001.zip", {M(file_first ? "a/b" : "a", 1)}));
    auto data = BuildNodes(std::move(v));
    ASSERT_FALSE(data.ok());
    const std::string& msg = data.status().message();
    EXPECT_NE(msg.find("key a "), std::string::npos) << msg;
    EXPECT_NE(msg.find("a/b"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pack-0000.zip"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pack-0001.zip"), std::string::npos) << msg;
  }
}

// Checks every query of `cat` against the data it was built from.
void ExpectMatches(const Catalog& cat, const CatalogData& data) {
  EXPECT_EQ(cat.totals().files, data.totals.files);
  EXPECT_EQ(cat.totals().directories, data.totals.directories);
  EXPECT_EQ(cat.totals().bytes, data.totals.bytes);
  ASSERT_EQ(cat.shard_count(), data.shards.size());
  auto shards = cat.Shards();
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  ASSERT_EQ(shards->size(), data.shards.size());
  int64_t newest = 0;
  for (size_t i = 0; i < data.shards.size(); ++i) {
    const ShardInfo& s = (*shards)[i];
    EXPECT_EQ(s.name, data.shards[i].name);
    EXPECT_EQ(s.id, i);
    EXPECT_EQ(s.size, data.shards[i].size);
    EXPECT_EQ(s.mtime_ns, data.shards[i].mtime_ns);
    EXPECT_EQ(s.fingerprint, data.shards[i].fingerprint);
    EXPECT_EQ(s.member_count, data.shards[i].member_count);
    auto one = cat.Shard(static_cast<uint32_t>(i));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(*one, &s);
    newest = std::max(newest, data.shards[i].mtime_ns);
  }
  EXPECT_FALSE(cat.Shard(static_cast<uint32_t>(data.shards.size())).ok());
  auto newest_read = cat.NewestShardMtime();
  ASSERT_TRUE(newest_read.ok());
  EXPECT_EQ(*newest_read, newest / 1000000000);
  EXPECT_EQ(cat.problems(), data.problems);
  EXPECT_EQ(cat.problem_shards(), data.problem_shards);
  for (const Node& want : data.nodes) {
    auto got = cat.Get(want.id);
    ASSERT_TRUE(got.ok() && got->has_value());
    const Node& g = **got;
    EXPECT_EQ(g.parent, want.parent);
    EXPECT_EQ(g.name, want.name);
    EXPECT_EQ(g.type, want.type);
    EXPECT_EQ(g.first_child, want.first_child);
    EXPECT_EQ(g.child_count, want.child_count);
    EXPECT_EQ(g.shard, want.shard);
    EXPECT_EQ(g.local_header_offset, want.local_header_offset);
    EXPECT_EQ(g.data_offset, want.data_offset);
    EXPECT_EQ(g.size, want.size);
    EXPECT_EQ(g.crc32, want.crc32);
    EXPECT_EQ(g.mode, want.mode);
    EXPECT_EQ(g.mtime, want.mtime);
    if (want.id != kRootId) {
      auto l = cat.Lookup(want.parent, want.name);
      ASSERT_TRUE(l.ok() && l->has_value());
      EXPECT_EQ((*l)->id, want.id);
    }
  }
  auto missing = cat.Get(data.nodes.size() + 1);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  auto none = cat.Lookup(kRootId, "no-such-name");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto b = cat.Find("b");
  ASSERT_TRUE(b.ok() && b->has_value());
  std::vector<Node> kids;
  ASSERT_TRUE(cat.List(**b, 1, 2, &kids).ok());
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(kids[0].name, "1.bin");
  EXPECT_EQ(kids[1].name, "2.bin");
  kids.clear();
  ASSERT_TRUE(cat.List(**b, 3, 100, &kids).ok());
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(kids[0].name, "c");
  kids.clear();
  ASSERT_TRUE(cat.List(**b, 4, 100, &kids).ok());
  EXPECT_TRUE(kids.empty());

  auto deep = cat.Find("b/c/deep.bin");
  ASSERT_TRUE(deep.ok() && deep->has_value());
  EXPECT_EQ((*deep)->size, 4u);
  auto key = cat.KeyOf(**deep);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "b/c/deep.bin");
  auto root = cat.Find("");
  ASSERT_TRUE(root.ok() && root->has_value());
  EXPECT_EQ((*root)->id, kRootId);
  for (const char* absent : {"b/c/nope", "a.txt/x", "nope/x", "b/", "b//c", "/b"}) {
    auto f = cat.Find(absent);
    ASSERT_TRUE(f.ok()) << absent;
    EXPECT_FALSE(f->has_value()) << absent;
  }

  std::map<std::string, uint64_t> files;
  ASSERT_TRUE(cat.ForEachFile([&](const std::string& k, const Node& n) {
                   files[k] = n.size;
                   return Status::OK();
                 }).ok());
  std::map<std::string, uint64_t> want_files = {{"B", 6},       {"a.txt", 1}, {"b/0.bin", 5},
                                                {"b/1.bin", 3}, {"b/2.bin", 2}, {"b/c/deep.bin", 4},
                                                {"z", 0}};
  EXPECT_EQ(files, want_files);
  int calls = 0;
  Status stop = cat.ForEachFile([&](const std::string&, const Node&) {
    ++calls;
    return Status::InvalidArgument("stop here");
  });
  EXPECT_EQ(stop.message(), "stop here");
  EXPECT_EQ(calls, 1);
}

// A key 10,000 directories deep (20,000 bytes, within a zip name's 65,535): built, written,
// reopened, found and named again without recursion or quadratic blow-up.
TEST(CatalogTest, TenThousandLevelDeepKey) {
  std::string key;
  for (int i = 0; i < 10000; ++i) key += "d/";
  key += "leaf.bin";
  std::vector<ShardContent> v;
  v.push_back(Shard("pack-0000.zip", {M(key, 3), M("top.txt", 1)}));
  auto data = BuildNodes(std::move(v));
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->totals.directories, 10001u);
  testing::TempDir tmp;
  const std::string path = tmp / "deep.sqlite";
  ASSERT_TRUE(WriteCatalog(path, *data).ok());
  auto cat = Catalog::Open(path);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto leaf = (*cat)->Find(key);
  ASSERT_TRUE(leaf.ok() && leaf->has_value());
  EXPECT_EQ((*leaf)->size, 3u);
  auto back = (*cat)->KeyOf(**leaf);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, key);
  auto missing = (*cat)->Find(key.substr(0, key.size() - 1));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST(CatalogTest, WriteOpenRoundTrip) {
  testing::TempDir tmp;
  auto data = BuildNodes(SampleShards());
  ASSERT_TRUE(data.ok());
  std::string path = tmp / kCatalogFileName;
  ASSERT_TRUE(WriteCatalog(path, *data).ok());
  auto cat = Catalog::Open(path);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  ExpectMatches(**cat, *data);
  // Nothing but the catalog is left in the directory (no temp files, no journals).
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    names.push_back(e.path().filename());
  }
  EXPECT_EQ(names, std::vector<std::string>{kCatalogFileName});
  // No absolute paths inside: the temp dir's path appears nowhere in the file.
  EXPECT_EQ(testing::ReadFile(path).find(tmp.path()), std::string::npos);
}

TEST(CatalogTest, FromDataAnswersLikeAFile) {
  auto data = BuildNodes(SampleShards());
  ASSERT_TRUE(data.ok());
  auto cat = Catalog::FromData(*data);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  ExpectMatches(**cat, *data);
  // Two in-memory catalogs do not share a database.
  auto other = BuildNodes({Shard("pack-0000.zip", {M("only", 1)})});
  ASSERT_TRUE(other.ok());
  auto cat2 = Catalog::FromData(*other);
  ASSERT_TRUE(cat2.ok());
  EXPECT_EQ((*cat2)->totals().files, 1u);
  EXPECT_EQ((*cat)->totals().files, 7u);
  auto f = (*cat2)->Find("a.txt");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->has_value());
}

TEST(CatalogTest, WriteReplacesAnOldCatalogAtomically) {
  testing::TempDir tmp;
  std::string path = tmp / kCatalogFileName;
  auto first = BuildNodes({Shard("pack-0000.zip", {M("old", 1)})});
  ASSERT_TRUE(WriteCatalog(path, *first).ok());
  auto old_cat = Catalog::Open(path);
  ASSERT_TRUE(old_cat.ok());
  auto second = BuildNodes(SampleShards());
  ASSERT_TRUE(WriteCatalog(path, *second).ok());
  auto cat = Catalog::Open(path);
  ASSERT_TRUE(cat.ok());
  ExpectMatches(**cat, *second);
  // The catalog opened before the replacement keeps answering from the old file...
  auto old = (*old_cat)->Find("old");
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->has_value());
  // ...and a second connection it opens later (needed while the first is busy in ForEachFile)
  // refuses the new file instead of mixing the two catalogs' ids.
  Status inner;
  Status outer = (*old_cat)->ForEachFile([&](const std::string&, const Node&) {
    inner = (*old_cat)->Get(kRootId).status();
    return Status::OK();
  });
  EXPECT_TRUE(outer.ok());
  EXPECT_EQ(inner.code(), Code::kStale) << inner.ToString();
  EXPECT_NE(inner.message().find("replaced"), std::string::npos);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(CatalogTest, MissingCatalogIsNotFoundWithAdvice) {
  testing::TempDir tmp;
  auto cat = Catalog::Open(tmp / kCatalogFileName);
  ASSERT_FALSE(cat.ok());
  EXPECT_EQ(cat.status().code(), Code::kNotFound);
  EXPECT_NE(cat.status().message().find("mkpack catalog"), std::string::npos);
}

void ExpectCorruption(const std::string& path, const std::string& why) {
  auto cat = Catalog::Open(path);
  ASSERT_FALSE(cat.ok()) << why;
  EXPECT_EQ(cat.status().code(), Code::kCorruption) << why << ": " << cat.status().ToString();
  EXPECT_NE(cat.status().message().find(path), std::string::npos) << cat.status().message();
  EXPECT_NE(cat.status().message().find("mkpack catalog"), std::string::npos)
      << cat.status().message();
}

// A catalog big enough to span many pages, so truncation cuts real data.
CatalogData BigData(size_t n) {
  std::vector<ShardMember> members;
  for (size_t i = 0; i < n; ++i) {
    members.push_back(M("dir" + std::to_string(i % 37) + "/file-" + std::to_string(i) + ".jpg",
                        i, i * 100));
  }
  auto data = BuildNodes({Shard("pack-0000.zip", std::move(members))});
  EXPECT_TRUE(data.ok());
  return std::move(data).value();
}

TEST(CatalogTest, DamagedOrForeignFilesFailWithCorruption) {
  testing::TempDir tmp;
  std::string good = tmp / "good.sqlite";
  ASSERT_TRUE(WriteCatalog(good, BigData(5000)).ok());
  std::string bytes = testing::ReadFile(good);
  ASSERT_GT(bytes.size(), 100000u);

  std::string truncated = tmp / "truncated.sqlite";
  testing::WriteFile(truncated, bytes.substr(0, bytes.size() / 2));
  ExpectCorruption(truncated, "truncated");

  std::string header = tmp / "header.sqlite";
  std::string h = bytes;
  for (int i = 0; i < 16; ++i) h[i] = 'X';
  testing::WriteFile(header, h);
  ExpectCorruption(header, "header overwritten");

  std::string random = tmp / "random.sqlite";
  testing::WriteFile(random, testing::RandomBytes(65536, 3));
  ExpectCorruption(random, "random bytes");

  std::string empty = tmp / "empty.sqlite";
  testing::WriteFile(empty, "");
  ExpectCorruption(empty, "empty file");

  std::string version = tmp / "version.sqlite";
  testing::WriteFile(version, bytes);
  auto r = testing::Sh("sqlite3 '" + version +
                       "' \"UPDATE meta SET value='99' WHERE key='schema_version'\" 2>&1 || "
                       "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                       "c.execute(\\\"UPDATE meta SET value='99' WHERE key='schema_version'\\\"); "
                       "c.commit()\" '" + version + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ExpectCorruption(version, "wrong schema version");
  auto vc = Catalog::Open(version);
  EXPECT_NE(vc.status().message().find("schema version"), std::string::npos);

  std::string foreign = tmp / "foreign.sqlite";
  r = testing::Sh("python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                  "c.execute('CREATE TABLE t(x)'); c.commit()\" '" + foreign + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectCorruption(foreign, "foreign SQLite database");

  // A shard id near 2^32 sized the shard list to 4 billion entries (found by catalog_fuzz).
  std::string huge_id = tmp / "huge_id.sqlite";
  testing::WriteFile(huge_id, bytes);
  r = testing::Sh("python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                  "c.execute('UPDATE shards SET id=4000000000 WHERE id=(SELECT max(id) FROM "
                  "shards)'); c.commit()\" '" + huge_id + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectCorruption(huge_id, "shard id out of range");
  auto hc = Catalog::Open(huge_id);
  EXPECT_NE(hc.status().message().find("at most 4194304 shards"), std::string::npos)
      << hc.status().message();

  std::string no_nodes = tmp / "no_nodes.sqlite";
  testing::WriteFile(no_nodes, bytes);
  r = testing::Sh("python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                  "c.execute('DROP TABLE nodes'); c.commit()\" '" + no_nodes + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectCorruption(no_nodes, "missing table");

  ExpectCorruption(tmp.path(), "a directory");
}

TEST(CatalogTest, ConcurrentLookupsFromEightThreads) {
  testing::TempDir tmp;
  std::string path = tmp / kCatalogFileName;
  CatalogData data = BigData(20000);
  ASSERT_TRUE(WriteCatalog(path, data).ok());
  auto file_cat = Catalog::Open(path);
  ASSERT_TRUE(file_cat.ok());
  auto mem_cat = Catalog::FromData(data);
  ASSERT_TRUE(mem_cat.ok());
  for (const Catalog* cat : {file_cat->get(), mem_cat->get()}) {
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 5000; ++i) {
          size_t k = (static_cast<size_t>(i) * 7919 + static_cast<size_t>(t) * 104729) % 20000;
          std::string key = "dir" + std::to_string(k % 37) + "/file-" + std::to_string(k) + ".jpg";
          auto f = cat->Find(key);
          if (!f.ok() || !f->has_value() || (*f)->size != k || (*f)->local_header_offset != k * 100) {
            ++failures;
            continue;
          }
          auto back = cat->KeyOf(**f);
          if (!back.ok() || *back != key) ++failures;
          auto g = cat->Get((*f)->id);
          if (!g.ok() || !g->has_value() || (*g)->name != (*f)->name) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
  }
}

// A catalog file deleted under a live mount: a thread that finds no free connection cannot open
// a new one, and waits for one of the open ones instead of failing (here while another thread
// holds the only one, reading a range).
TEST(CatalogTest, ADeletedFileIsStillReadThroughTheOpenConnections) {
  testing::TempDir tmp;
  std::string path = tmp / kCatalogFileName;
  CatalogData data = BigData(2000);
  ASSERT_TRUE(WriteCatalog(path, data).ok());
  auto cat = Catalog::Open(path);
  ASSERT_TRUE(cat.ok());
  ASSERT_TRUE((*cat)->Find("dir1/file-1.jpg").ok());  // one connection open, in the pool
  ASSERT_EQ(::unlink(path.c_str()), 0);
  std::atomic<bool> holding{false};
  std::thread reader([&] {
    Status st = (*cat)->ForRange(1, 50, [&](Node&&) {
      holding = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // 49 rows: about a second
      return true;
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
  });
  while (!holding) std::this_thread::yield();
  auto f = (*cat)->Find("dir5/file-5.jpg");  // no free connection, and none can be opened
  reader.join();
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->size, 5u);
}

// Schema 2 finds a child through a fence every 16 children, then a scan: every child of a
// 1,000-child directory is found, names between, before and after them are not, and the scan
// that runs past the directory's last child into the next directory's ids does not find that
// directory's children.
TEST(CatalogTest, LookupsAcrossFencesOfALargeDirectory) {
  std::vector<ShardMember> members;
  for (int i = 0; i < 2000; i += 2) {
    char name[32];
    std::snprintf(name, sizeof name, "big/f%04d", i);
    members.push_back(M(name, static_cast<uint64_t>(i)));
  }
  members.push_back(M("big0/zz-only-in-big0", 7));
  members.push_back(M("small/a", 1));
  std::vector<ShardContent> v;
  v.push_back(Shard("pack-0000.zip", std::move(members)));
  auto data = BuildNodes(std::move(v));
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  testing::TempDir tmp;
  const std::string path = tmp / kCatalogFileName;
  ASSERT_TRUE(WriteCatalog(path, *data).ok());
  auto cat = Catalog::Open(path);
  ASSERT_TRUE(cat.ok()) << cat.status().ToString();
  auto big = (*cat)->Find("big");
  ASSERT_TRUE(big.ok() && big->has_value());
  ASSERT_EQ((*big)->child_count, 1000u);
  for (int i = 0; i < 2000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "f%04d", i);
    auto l = (*cat)->Lookup((*big)->id, name);
    ASSERT_TRUE(l.ok()) << name;
    if (i % 2 == 0) {
      ASSERT_TRUE(l->has_value()) << name;
      EXPECT_EQ((*l)->name, name);
      EXPECT_EQ((*l)->size, static_cast<uint64_t>(i));
    } else {
      EXPECT_FALSE(l->has_value()) << name;
    }
  }
  for (const char* absent : {"", "a", "f", "f1998x", "g", "zz-only-in-big0", "\xff"}) {
    auto l = (*cat)->Lookup((*big)->id, absent);
    ASSERT_TRUE(l.ok());
    EXPECT_FALSE(l->has_value()) << absent;
  }
  auto other = (*cat)->Find("big0/zz-only-in-big0");
  ASSERT_TRUE(other.ok() && other->has_value());
  EXPECT_EQ((*other)->size, 7u);
  // A file is no directory: nothing is found under it.
  auto under_file = (*cat)->Lookup((*other)->id, "x");
  ASSERT_TRUE(under_file.ok());
  EXPECT_FALSE(under_file->has_value());
  // About 2 bytes of fences per member, where a full (parent, name) index costs ~28.
  auto db = sql::Db::Open(path, SQLITE_OPEN_READONLY, path);
  ASSERT_TRUE(db.ok());
  auto fences = db->Prepare("SELECT count(*) FROM fences");
  ASSERT_TRUE(fences.ok());
  ASSERT_TRUE(*fences->Step());
  EXPECT_EQ(fences->Int(0), 1 + 63 + 1 + 1);  // the root's 3 children, big's 1000 / 16, big0, small
}

// A schema 1 catalog (written by packfs before schema 2; a copy of the multi-shard fixture's, kept
// in fixtures/catalog-v1) is still read, with the same nodes as a schema 2 catalog of the same
// shards, and `mkpack catalog` (RefreshCatalog) upgrades it to schema 2 reusing every shard's rows.
TEST(CatalogTest, SchemaOneCatalogsAreReadAndUpgraded) {
  testing::TempDir tmp;
  const std::string media = testing::FixturesDir() + "/interop/multi-shard/media";
  const std::string v1 = tmp / "v1", v2 = tmp / "v2";
  std::filesystem::copy(media, v1);
  std::filesystem::copy(media, v2);
  std::filesystem::copy_file(testing::FixturesDir() + "/catalog-v1/multi-shard.sqlite",
                             v1 + "/" + kCatalogFileName);
  auto built = RefreshCatalog(v2, 2);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto old_cat = Catalog::Open(v1 + "/" + kCatalogFileName);
  ASSERT_TRUE(old_cat.ok()) << old_cat.status().ToString();
  auto new_cat = Catalog::Open(v2 + "/" + kCatalogFileName);
  ASSERT_TRUE(new_cat.ok()) << new_cat.status().ToString();
  auto keys_of = [](const Catalog& c) {
    std::map<std::string, Node> out;
    EXPECT_TRUE(c.ForEachFile([&](const std::string& k, const Node& n) {
                   out[k] = n;
                   return Status::OK();
                 }).ok());
    return out;
  };
  const std::map<std::string, Node> old_files = keys_of(**old_cat);
  const std::map<std::string, Node> new_files = keys_of(**new_cat);
  ASSERT_EQ(old_files.size(), 308u);
  ASSERT_EQ(old_files.size(), new_files.size());
  for (const auto& [key, want] : new_files) {
    auto got = (*old_cat)->Find(key);
    ASSERT_TRUE(got.ok() && got->has_value()) << key;
    const Node& g = **got;
    EXPECT_EQ(g.id, want.id) << key;
    EXPECT_EQ(g.shard, want.shard) << key;
    EXPECT_EQ(g.local_header_offset, want.local_header_offset) << key;
    EXPECT_EQ(g.data_offset, want.data_offset) << key;
    EXPECT_EQ(g.size, want.size) << key;
    EXPECT_EQ(g.crc32, want.crc32) << key;
    EXPECT_EQ(g.mode, want.mode) << key;
    EXPECT_EQ(g.mtime, want.mtime) << key;
    auto again = (*new_cat)->Find(key);
    ASSERT_TRUE(again.ok() && again->has_value()) << key;
    EXPECT_EQ((*again)->id, want.id) << key;
  }
  // The copies are newer than the shards the fixture's catalog describes; give them its mtimes,
  // so that the refresh sees them unchanged.
  auto old_shards = (*old_cat)->Shards();
  ASSERT_TRUE(old_shards.ok());
  for (const ShardInfo& shard : *old_shards) {
    struct timespec times[2];
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = shard.mtime_ns / 1000000000;
    times[1].tv_nsec = shard.mtime_ns % 1000000000;
    ASSERT_EQ(::utimensat(AT_FDCWD, (v1 + "/" + shard.name).c_str(), times, 0), 0);
  }
  old_cat->reset();
  auto upgraded = RefreshCatalog(v1, 2);
  ASSERT_TRUE(upgraded.ok()) << upgraded.status().ToString();
  EXPECT_EQ(upgraded->report.shards_reused, 5u);
  EXPECT_EQ(upgraded->report.shards_indexed, 0u);
  auto db = sql::Db::Open(v1 + "/" + kCatalogFileName, SQLITE_OPEN_READONLY, v1);
  ASSERT_TRUE(db.ok());
  auto version = db->Prepare("SELECT value FROM meta WHERE key='schema_version'");
  ASSERT_TRUE(version.ok());
  ASSERT_TRUE(*version->Step());
  EXPECT_EQ(version->Text(0), "2");
  auto reopened = Catalog::Open(v1 + "/" + kCatalogFileName);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(keys_of(**reopened).size(), 308u);
}

TEST(CatalogTest, TwoHundredThousandMembers) {
  testing::TempDir tmp;
  std::string path = tmp / kCatalogFileName;
  std::vector<ShardContent> shards;
  for (int s = 0; s < 4; ++s) {
    std::vector<ShardMember> members;
    for (int i = 0; i < 50000; ++i) {
      int k = s * 50000 + i;
      members.push_back(M("episode_" + std::to_string(k / 1000) + "/cam/" + std::to_string(k) +
                              ".jpg",
                          static_cast<uint64_t>(k), static_cast<uint64_t>(i) * 64));
    }
    shards.push_back(Shard("pack-000" + std::to_string(s) + ".zip", std::move(members)));
  }
  auto data = BuildNodes(std::move(shards));
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->totals.files, 200000u);
  EXPECT_EQ(data->totals.directories, 1u + 200u + 200u);
  ASSERT_TRUE(WriteCatalog(path, *data).ok());
  auto cat = Catalog::Open(path);
  ASSERT_TRUE(cat.ok());
  for (int k : {0, 1, 49999, 50000, 123456, 199999}) {
    std::string key = "episode_" + std::to_string(k / 1000) + "/cam/" + std::to_string(k) + ".jpg";
    auto f = (*cat)->Find(key);
    ASSERT_TRUE(f.ok() && f->has_value()) << key;
    EXPECT_EQ((*f)->size, static_cast<uint64_t>(k));
    EXPECT_EQ((*f)->shard, static_cast<uint32_t>(k / 50000));
  }
  auto ep = (*cat)->Find("episode_123/cam");
  ASSERT_TRUE(ep.ok() && ep->has_value());
  EXPECT_EQ((*ep)->child_count, 1000u);
  std::vector<Node> kids;
  ASSERT_TRUE((*cat)->List(**ep, 0, 1000, &kids).ok());
  ASSERT_EQ(kids.size(), 1000u);
  for (size_t i = 1; i < kids.size(); ++i) EXPECT_LT(kids[i - 1].name, kids[i].name);
  uint64_t count = 0;
  ASSERT_TRUE((*cat)->ForEachFile([&](const std::string&, const Node&) {
                       ++count;
                       return Status::OK();
                     }).ok());
  EXPECT_EQ(count, 200000u);
}

}  // namespace
}  // namespace packfs
