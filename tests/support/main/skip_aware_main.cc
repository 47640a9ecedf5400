// The main() of every gtest binary: runs the tests like gtest_main, then exits with
// kSkipExitCode when nothing failed but some test called GTEST_SKIP, so that ctest (whose
// SKIP_RETURN_CODE is set to it in CMakeLists.txt) lists the binary as skipped instead of counting
// it as passed. Failures win: a binary with a failure and a skip exits 1. The skipped tests and
// their reasons are printed last, one line each, for scripts/test.sh and for whoever reads the log.
#include <gtest/gtest.h>

#include <cstdio>

namespace {
constexpr int kSkipExitCode = 77;  // the automake convention; set as SKIP_RETURN_CODE in CMake
}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc != 0) return rc;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (unit.skipped_test_count() == 0) return 0;
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(t);
      if (!info.result()->Skipped()) continue;
      const char* why = "";
      for (int p = 0; p < info.result()->total_part_count(); ++p) {
        const ::testing::TestPartResult& part = info.result()->GetTestPartResult(p);
        if (part.skipped() && part.message() != nullptr) why = part.message();
      }
      std::printf("packfs-test-skipped: %s.%s: %s\n", suite.name(), info.name(), why);
    }
  }
  return kSkipExitCode;
}
