// RecentNodes (core/read/recent_nodes.h): a node put is got back whole until another node of
// the same slot replaces it; other inodes, and inode 0, are never answered; concurrent puts and
// gets never mix two nodes.
#include "core/read/recent_nodes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace packfs {
namespace {

Node FileNode(uint64_t id) {
  Node n;
  n.id = id;
  n.parent = 1;
  n.name = "file-with-a-name-longer-than-sso-" + std::to_string(id);
  n.type = NodeType::kFile;
  n.shard = static_cast<uint32_t>(id % 7);
  n.data_offset = id * 3;
  n.size = id * 5;
  return n;
}

TEST(RecentNodesTest, GivesBackWhatWasPutUntilReplaced) {
  RecentNodes nodes;
  EXPECT_FALSE(nodes.Get(0));
  EXPECT_FALSE(nodes.Get(42));
  nodes.Put(FileNode(42));
  auto got = nodes.Get(42);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->name, FileNode(42).name);
  EXPECT_EQ(got->data_offset, 126u);
  EXPECT_FALSE(nodes.Get(43));
  EXPECT_FALSE(nodes.Get(42 + RecentNodes::kSlots));  // same slot, another inode
  nodes.Put(FileNode(42 + RecentNodes::kSlots));
  EXPECT_FALSE(nodes.Get(42));
  ASSERT_TRUE(nodes.Get(42 + RecentNodes::kSlots));
  EXPECT_EQ(nodes.Get(42 + RecentNodes::kSlots)->size, (42 + RecentNodes::kSlots) * 5);
}

TEST(RecentNodesTest, ConcurrentUseNeverMixesNodes) {
  RecentNodes nodes;
  std::vector<std::thread> threads;
  std::atomic<int> mixed{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 1; i < 200000; ++i) {
        const uint64_t id = (i * 2654435761u + static_cast<uint64_t>(t)) % 50000 + 1;
        if (i % 3 == 0) {
          nodes.Put(FileNode(id));
        } else if (auto n = nodes.Get(id)) {
          const Node want = FileNode(id);
          if (n->id != id || n->name != want.name || n->size != want.size) ++mixed;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mixed.load(), 0);
}

}  // namespace
}  // namespace packfs
