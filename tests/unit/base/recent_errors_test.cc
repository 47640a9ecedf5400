// RecentErrors: bounded to its capacity (oldest dropped, total still counted), safe under
// concurrent adds, and rendered as valid JSON that fits the size asked for by leaving out the
// oldest records.
#include "core/base/recent_errors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace packfs {
namespace {

TEST(RecentErrorsTest, KeepsTheLastRecordsInOrder) {
  RecentErrors errors(3);
  for (int i = 0; i < 5; ++i) {
    errors.Add(ErrorRecord{1000 + i, "k" + std::to_string(i), "media/pack-0000.zip",
                           "message " + std::to_string(i)});
  }
  std::vector<ErrorRecord> got = errors.Snapshot();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].path, "k2");
  EXPECT_EQ(got[2].path, "k4");
  EXPECT_EQ(got[2].time, 1004);
  EXPECT_EQ(errors.total(), 5u);
}

TEST(RecentErrorsTest, JsonArrayOfRecords) {
  RecentErrors errors;
  EXPECT_EQ(errors.ToJson(), "[]");
  errors.Add(ErrorRecord{1764669600, "a/\"quoted\".jpg", "media/pack-0003.zip",
                         "CRC-32 mismatch\nsecond line"});
  errors.Add("", "", "a warning without a file");
  const nlohmann::json j = nlohmann::json::parse(errors.ToJson());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["time"], "2025-12-02T10:00:00Z");
  EXPECT_EQ(j[0]["path"], "a/\"quoted\".jpg");
  EXPECT_EQ(j[0]["shard"], "media/pack-0003.zip");
  EXPECT_EQ(j[0]["message"], "CRC-32 mismatch\nsecond line");
  EXPECT_EQ(j[1]["path"], "");
  EXPECT_EQ(j[1]["message"], "a warning without a file");
}

TEST(RecentErrorsTest, JsonFitsByDroppingTheOldest) {
  RecentErrors errors(100);
  for (int i = 0; i < 100; ++i) {
    errors.Add(ErrorRecord{i, "key" + std::to_string(i), "", std::string(900, 'x')});
  }
  const std::string full = errors.ToJson(1 << 20);
  EXPECT_EQ(nlohmann::json::parse(full).size(), 100u);
  const std::string json = errors.ToJson(65536);
  EXPECT_LE(json.size(), 65536u);
  const nlohmann::json j = nlohmann::json::parse(json);
  ASSERT_GT(j.size(), 10u);
  ASSERT_LT(j.size(), 100u);
  EXPECT_EQ(j.back()["path"], "key99");  // the newest are the ones kept
  EXPECT_EQ(j.front()["path"], "key" + std::to_string(100 - j.size()));
  EXPECT_EQ(errors.ToJson(10), "[]");
}

TEST(RecentErrorsTest, LongMessagesAreCutAtACharacter) {
  RecentErrors errors;
  std::string message;
  while (message.size() < 3 * RecentErrors::kMaxMessage) message += "é";  // 2 bytes each
  errors.Add("k", "", message);
  const std::string kept = errors.Snapshot()[0].message;
  EXPECT_LE(kept.size(), RecentErrors::kMaxMessage);
  EXPECT_EQ(kept.substr(kept.size() - 3), "...");
  const nlohmann::json j = nlohmann::json::parse(errors.ToJson());
  const std::string back = j[0]["message"];
  EXPECT_EQ(back.find("\xEF\xBF\xBD"), std::string::npos);  // no replacement character
}

TEST(RecentErrorsTest, ConcurrentAdds) {
  RecentErrors errors(100);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&errors, t] {
      for (int i = 0; i < 1000; ++i) {
        errors.Add("t" + std::to_string(t), "", "error " + std::to_string(i));
        if (i % 100 == 0) (void)errors.ToJson();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.total(), 8000u);
  EXPECT_EQ(errors.Snapshot().size(), 100u);
  EXPECT_EQ(nlohmann::json::parse(errors.ToJson()).size(), 100u);
}

}  // namespace
}  // namespace packfs
