// Tests of the LeRobot v2.1 metadata generated from v3.0 metadata: the real v3 fixture's
// info.json, episodes and tasks converted and compared with v2.1 files written by hand from
// core/lerobot/lerobot_v21_format.md (key order, totals, templates, Python's json layout); v3
// info.json variants (converted from v2.1, current LeRobot's field order); and the errors.
#include "core/lerobot/lerobot_v21.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace packfs {
namespace {

std::string Fixture(const std::string& rel) {
  return testing::FixturesDir() + "/lerobot-v3-record-test/" + rel;
}
const char* const kEpisodes = "meta/episodes/chunk-000/file-000.parquet";
const char* const kTasks = "meta/tasks.parquet";

// The features of the fixture as a v2.1 info.json holds them: v3's, unchanged (native v3 adds no
// per-feature fps), so the same text json.dump wrote into the v3 file.
const char* const kFixtureFeatures = R"(    "features": {
        "action": {
            "dtype": "float32",
            "names": [
                "shoulder_pan.pos",
                "shoulder_lift.pos",
                "elbow_flex.pos",
                "wrist_flex.pos",
                "wrist_roll.pos",
                "gripper.pos"
            ],
            "shape": [
                6
            ]
        },
        "observation.state": {
            "dtype": "float32",
            "names": [
                "shoulder_pan.pos",
                "shoulder_lift.pos",
                "elbow_flex.pos",
                "wrist_flex.pos",
                "wrist_roll.pos",
                "gripper.pos"
            ],
            "shape": [
                6
            ]
        },
        "observation.images.front": {
            "dtype": "video",
            "shape": [
                480,
                640,
                3
            ],
            "names": [
                "height",
                "width",
                "channels"
            ],
            "info": {
                "video.height": 480,
                "video.width": 640,
                "video.codec": "av1",
                "video.pix_fmt": "yuv420p",
                "video.is_depth_map": false,
                "video.fps": 30,
                "video.channels": 3,
                "has_audio": false
            }
        },
        "observation.images.top": {
            "dtype": "video",
            "shape": [
                480,
                640,
                3
            ],
            "names": [
                "height",
                "width",
                "channels"
            ],
            "info": {
                "video.height": 480,
                "video.width": 640,
                "video.codec": "av1",
                "video.pix_fmt": "yuv420p",
                "video.is_depth_map": false,
                "video.fps": 30,
                "video.channels": 3,
                "has_audio": false
            }
        },
        "timestamp": {
            "dtype": "float32",
            "shape": [
                1
            ],
            "names": null
        },
        "frame_index": {
            "dtype": "int64",
            "shape": [
                1
            ],
            "names": null
        },
        "episode_index": {
            "dtype": "int64",
            "shape": [
                1
            ],
            "names": null
        },
        "index": {
            "dtype": "int64",
            "shape": [
                1
            ],
            "names": null
        },
        "task_index": {
            "dtype": "int64",
            "shape": [
                1
            ],
            "names": null
        }
    }
})";

// §1.2 order; totals from the tables (4 episodes of 373+374+372+373 frames, 1 task), two
// cameras so 8 videos, one chunk of 1000; v3's data_files_size_in_mb and
// video_files_size_in_mb dropped.
const char* const kFixtureHead = R"({
    "codebase_version": "v2.1",
    "robot_type": "so101_follower",
    "total_episodes": 4,
    "total_frames": 1492,
    "total_tasks": 1,
    "total_videos": 8,
    "total_chunks": 1,
    "chunks_size": 1000,
    "fps": 30,
    "splits": {
        "train": "0:4"
    },
    "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
    "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
)";

std::vector<Episode> FixtureEpisodes() {
  auto info = ParseLeRobotInfo(testing::ReadFile(Fixture("meta/info.json")), "meta/info.json");
  EXPECT_TRUE(info.ok()) << info.status().ToString();
  if (!info.ok()) return {};
  MemoryShardSource src(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto eps = ReadLeRobotEpisodes({&src}, *info);
  EXPECT_TRUE(eps.ok()) << eps.status().ToString();
  return eps.ok() ? std::move(eps).value() : std::vector<Episode>{};
}

TEST(LeRobotV21Test, InfoOfRealDataset) {
  const std::vector<Episode> eps = FixtureEpisodes();
  const V21Totals totals = LeRobotV21TotalsOf(eps, 1);
  EXPECT_EQ(totals.total_episodes, 4u);
  EXPECT_EQ(totals.total_frames, 1492u);
  EXPECT_EQ(totals.total_tasks, 1u);
  const std::string v3 = testing::ReadFile(Fixture("meta/info.json"));
  auto r = LeRobotV21InfoJson(v3, totals, "meta/info.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, std::string(kFixtureHead) + kFixtureFeatures);
  // The features text is also byte for byte what Python's json.dump wrote in the v3 file.
  const size_t at = v3.find("    \"features\": {");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(v3.substr(at), kFixtureFeatures);
}

// A v3 info.json as convert_dataset_v21_to_v30 leaves it (§1.4): per-feature fps on non-video
// features, the size keys appended at the end; plus a float fps, v1-style names, no videos,
// an unknown top-level key and an unknown dtype (both carried/dropped as documented).
TEST(LeRobotV21Test, InfoConvertedFromV21) {
  const char* const kV3 = R"({"codebase_version": "v3.0", "robot_type": null,
    "total_episodes": 2, "total_frames": 10, "total_tasks": 1, "chunks_size": 1000,
    "fps": 30.0, "splits": {"train": "0:2"},
    "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", "video_path": null,
    "features": {
      "observation.state": {"dtype": "float32", "shape": [2],
                            "names": {"motors": ["a", "ü\"b"]}, "fps": 30},
      "next.reward": {"dtype": "float32", "shape": [1], "names": null, "fps": 30.0},
      "index": {"dtype": "int64", "shape": [1], "names": null, "fps": 30}},
    "data_files_size_in_mb": 100, "video_files_size_in_mb": 500, "tools": {"x": 1}})";
  auto r = LeRobotV21InfoJson(kV3, {2, 10, 1}, "v3/meta/info.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const char* const kWant = R"({
    "codebase_version": "v2.1",
    "robot_type": null,
    "total_episodes": 2,
    "total_frames": 10,
    "total_tasks": 1,
    "total_videos": 0,
    "total_chunks": 1,
    "chunks_size": 1000,
    "fps": 30,
    "splits": {
        "train": "0:2"
    },
    "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
    "video_path": null,
    "features": {
        "observation.state": {
            "dtype": "float32",
            "shape": [
                2
            ],
            "names": {
                "motors": [
                    "a",
                    "ü\"b"
                ]
            }
        },
        "next.reward": {
            "dtype": "float32",
            "shape": [
                1
            ],
            "names": null
        },
        "index": {
            "dtype": "int64",
            "shape": [
                1
            ],
            "names": null
        }
    }
})";
  EXPECT_EQ(*r, kWant);
}

// Current LeRobot's DatasetInfo order (§1.4: fps and features first, robot_type and splits
// last, here both absent), a non-integral float kept, a camera with its own "fps" kept, and
// 2500 episodes in 3 chunks of 1000.
TEST(LeRobotV21Test, InfoInDataclassOrderWithVideo) {
  const char* const kV3 = R"({"codebase_version": "v3.1", "fps": 29.97,
    "features": {"cam": {"dtype": "video", "shape": [2, 4, 3], "names": ["height", "width",
      "channels"], "fps": 30, "info": {"video.fps": 29.97, "is_depth_map": false}}},
    "total_episodes": 2500, "total_frames": 5000, "total_tasks": 2, "chunks_size": 100,
    "data_files_size_in_mb": 100, "video_files_size_in_mb": 200,
    "data_path": "d", "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/f.mp4"})";
  auto r = LeRobotV21InfoJson(kV3, {2500, 5000, 2}, "info.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const char* const kWant = R"({
    "codebase_version": "v2.1",
    "robot_type": null,
    "total_episodes": 2500,
    "total_frames": 5000,
    "total_tasks": 2,
    "total_videos": 2500,
    "total_chunks": 3,
    "chunks_size": 1000,
    "fps": 29.97,
    "splits": {
        "train": "0:2500"
    },
    "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
    "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
    "features": {
        "cam": {
            "dtype": "video",
            "shape": [
                2,
                4,
                3
            ],
            "names": [
                "height",
                "width",
                "channels"
            ],
            "fps": 30,
            "info": {
                "video.fps": 29.97,
                "is_depth_map": false
            }
        }
    }
})";
  EXPECT_EQ(*r, kWant);
}

TEST(LeRobotV21Test, InfoTotalChunks) {
  const char* const kV3 = R"({"codebase_version": "v3.0", "fps": 10, "features": {}})";
  auto chunks_of = [&](uint64_t episodes) {
    auto r = LeRobotV21InfoJson(kV3, {episodes, 0, 0}, "info.json");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    const std::string key = "\"total_chunks\": ";
    const size_t at = r.ok() ? r->find(key) : std::string::npos;
    return at == std::string::npos ? std::string("?")
                                   : r->substr(at + key.size(), r->find(',', at) - at - key.size());
  };
  EXPECT_EQ(chunks_of(0), "0");
  EXPECT_EQ(chunks_of(1), "1");
  EXPECT_EQ(chunks_of(1000), "1");
  EXPECT_EQ(chunks_of(1001), "2");
  // No video features: video_path null even though v3 named one.
  auto r = LeRobotV21InfoJson(
      R"({"codebase_version": "v3.0", "fps": 10, "features": {}, "video_path": "v/{video_key}"})",
      {0, 0, 0}, "info.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->find("\"video_path\": null,\n"), std::string::npos) << *r;
  EXPECT_NE(r->find("\"splits\": {\n        \"train\": \"0:0\"\n    },"), std::string::npos) << *r;
  EXPECT_NE(r->find("\"features\": {}\n}"), std::string::npos) << *r;
}

TEST(LeRobotV21Test, InfoErrorsNameTheFile) {
  struct Case {
    const char* json;
    Code code;
  } const cases[] = {
      {"{not json", Code::kCorruption},
      {"[1, 2]", Code::kCorruption},
      {R"({"codebase_version": "v2.1", "fps": 30, "features": {}})", Code::kInvalidArgument},
      {R"({"fps": 30, "features": {}})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "features": {}})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "fps": 0, "features": {}})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "fps": "30", "features": {}})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "fps": 30})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "fps": 30, "features": []})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "fps": 30, "features": {"a": 1}})", Code::kInvalidArgument},
      {R"({"codebase_version": "v3.0", "fps": 30, "features": {"a": {"shape": [1]}}})",
       Code::kInvalidArgument},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = LeRobotV21InfoJson(c.json, {}, "ds/meta/info.json");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_NE(r.status().message().find("ds/meta/info.json"), std::string::npos)
        << r.status().message();
  }
}

TEST(LeRobotV21Test, EpisodesJsonlOfRealDataset) {
  EXPECT_EQ(LeRobotV21EpisodesJsonl(FixtureEpisodes()),
            "{\"episode_index\": 0, \"tasks\": [\"Pick the orange cube and place it in the box\"], "
            "\"length\": 373}\n"
            "{\"episode_index\": 1, \"tasks\": [\"Pick the orange cube and place it in the box\"], "
            "\"length\": 374}\n"
            "{\"episode_index\": 2, \"tasks\": [\"Pick the orange cube and place it in the box\"], "
            "\"length\": 372}\n"
            "{\"episode_index\": 3, \"tasks\": [\"Pick the orange cube and place it in the box\"], "
            "\"length\": 373}\n");
}

TEST(LeRobotV21Test, EpisodesJsonlFormatting) {
  // The spec's real lines (§2), then several tasks kept in order, escaping, raw UTF-8, no tasks.
  Episode a, b, c, d;
  a.index = 0;
  a.length = 479;
  a.tasks = {"Pick up the yellow bottle on the table."};
  b.index = 1;
  b.length = 393;
  b.tasks = a.tasks;
  c.index = 2;
  c.length = 1;
  c.tasks = {"z \"q\"\tend", "夹起 ü\\"};
  d.index = 3;
  EXPECT_EQ(LeRobotV21EpisodesJsonl({a, b, c, d}),
            R"({"episode_index": 0, "tasks": ["Pick up the yellow bottle on the table."], )"
            R"("length": 479})" "\n"
            R"({"episode_index": 1, "tasks": ["Pick up the yellow bottle on the table."], )"
            R"("length": 393})" "\n"
            R"({"episode_index": 2, "tasks": ["z \"q\"\tend", "夹起 ü\\"], "length": 1})" "\n"
            R"({"episode_index": 3, "tasks": [], "length": 0})" "\n");
  EXPECT_EQ(LeRobotV21EpisodesJsonl({}), "");
}

TEST(LeRobotV21Test, TasksOfRealDataset) {
  MemoryShardSource src(kTasks, testing::ReadBytes(Fixture(kTasks)));
  auto tasks = ReadLeRobotTasks(src);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].index, 0u);
  EXPECT_EQ((*tasks)[0].task, "Pick the orange cube and place it in the box");
  auto jsonl = LeRobotV21TasksJsonl(src);
  ASSERT_TRUE(jsonl.ok()) << jsonl.status().ToString();
  EXPECT_EQ(*jsonl,
            R"({"task_index": 0, "task": "Pick the orange cube and place it in the box"})" "\n");
}

TEST(LeRobotV21Test, TasksJsonlFormatting) {
  // The spec's example line (§3.1), then escaping and raw UTF-8.
  EXPECT_EQ(LeRobotV21TasksJsonl({{0, "Pick up the yellow bottle on the table."},
                                  {1, "say \"hi\"\n"},
                                  {2, "nimm den Würfel"}}),
            R"({"task_index": 0, "task": "Pick up the yellow bottle on the table."})" "\n"
            R"({"task_index": 1, "task": "say \"hi\"\n"})" "\n"
            R"({"task_index": 2, "task": "nimm den Würfel"})" "\n");
}

TEST(LeRobotV21Test, TasksErrorsNameTheFile) {
  // An episodes table has neither task_index nor a task string column.
  MemoryShardSource episodes(kEpisodes, testing::ReadBytes(Fixture(kEpisodes)));
  auto r = ReadLeRobotTasks(episodes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(kEpisodes), std::string::npos) << r.status().message();
  MemoryShardSource garbage("meta/tasks.parquet", std::vector<uint8_t>(64, 'x'));
  auto g = LeRobotV21TasksJsonl(garbage);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Code::kCorruption);
  EXPECT_NE(g.status().message().find("meta/tasks.parquet"), std::string::npos)
      << g.status().message();
}

}  // namespace
}  // namespace packfs
