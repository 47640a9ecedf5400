// Tests of Python-compatible JSON text: float repr (values and the texts Python 3 prints for
// them, including the spec's examples from real LeRobot v2.1 files), string escaping, and the
// one-line (jsonlines) and indent=4 (json.dump) layouts.
#include "core/lerobot/python_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace packfs {
namespace {

TEST(PythonJsonTest, FloatReprPositional) {
  EXPECT_EQ(PythonFloatRepr(0.1), "0.1");
  EXPECT_EQ(PythonFloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PythonFloatRepr(2.0 / 3.0), "0.6666666666666666");
  EXPECT_EQ(PythonFloatRepr(0.0), "0.0");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(1.0), "1.0");
  EXPECT_EQ(PythonFloatRepr(239.0), "239.0");
  EXPECT_EQ(PythonFloatRepr(100000.0), "100000.0");
  EXPECT_EQ(PythonFloatRepr(-2.5), "-2.5");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(0.00012345), "0.00012345");
  EXPECT_EQ(PythonFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatRepr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(PythonFloatRepr(9999999999999998.0), "9999999999999998.0");
}

TEST(PythonJsonTest, FloatReprExponent) {
  EXPECT_EQ(PythonFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(PythonFloatRepr(-1.234e-05), "-1.234e-05");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(1e22), "1e+22");
  EXPECT_EQ(PythonFloatRepr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(PythonFloatRepr(1.5e300), "1.5e+300");
  EXPECT_EQ(PythonFloatRepr(1e-100), "1e-100");
  EXPECT_EQ(PythonFloatRepr(5e-324), "5e-324");
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::min()), "2.2250738585072014e-308");
}

TEST(PythonJsonTest, FloatReprSpecialValuesAsJsonWritesThem) {
  EXPECT_EQ(PythonFloatRepr(std::nan("")), "NaN");
  EXPECT_EQ(PythonFloatRepr(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(PythonFloatRepr(-std::numeric_limits<double>::infinity()), "-Infinity");
}

// Numbers from YifanTian07/G1-policy-train/meta/episodes_stats.jsonl
// (core/lerobot/lerobot_v21_format.md
// §4.2): float64 stats, 251/255, and a float32 statistic printed as the double it widens to.
TEST(PythonJsonTest, FloatReprOfRealLeRobotStats) {
  EXPECT_EQ(PythonFloatRepr(15.933333333333334), "15.933333333333334");
  EXPECT_EQ(PythonFloatRepr(478.0 / 30.0), "15.933333333333334");
  EXPECT_EQ(PythonFloatRepr(138.27508813954884), "138.27508813954884");
  EXPECT_EQ(PythonFloatRepr(251.0 / 255.0), "0.984313725490196");
  EXPECT_EQ(PythonFloatRepr(static_cast<double>(-0.7725270986557007f)), "-0.7725270986557007");
  EXPECT_EQ(PythonFloatRepr(static_cast<double>(0.1f)), "0.10000000149011612");
}

TEST(PythonJsonTest, StringEscaping) {
  std::string out;
  AppendPythonJsonString("a\"b\\c\n\r\t\b\f", &out);
  EXPECT_EQ(out, R"("a\"b\\c\n\r\t\b\f")");
  out.clear();
  AppendPythonJsonString(std::string("\x01\x1f\x7f/", 4), &out);
  EXPECT_EQ(out, "\"\\u0001\\u001f\x7f/\"");
  out.clear();
  AppendPythonJsonString(std::string("nul\0x", 5), &out);
  EXPECT_EQ(out, "\"nul\\u0000x\"");
  out.clear();
  AppendPythonJsonString("ünïcode 夹起 😀", &out);  // ensure_ascii=False: raw UTF-8
  EXPECT_EQ(out, "\"ünïcode 夹起 😀\"");
}

// Expected values printed by /usr/bin/python3: json.dumps("é😀\x7f\"\n\x01a").
TEST(PythonJsonTest, AsciiStringEscaping) {
  std::string out;
  AppendPythonJsonAsciiString("é😀\x7f\"\n\x01" "a", &out);
  EXPECT_EQ(out, R"("\u00e9\ud83d\ude00\u007f\"\n\u0001a")");
  out.clear();
  AppendPythonJsonAsciiString("observation.state 夹", &out);
  EXPECT_EQ(out, R"("observation.state \u5939")");
}

nlohmann::ordered_json Sample() {
  return nlohmann::ordered_json::parse(
      R"({"z": 1, "a": [1.0, -2, null, true, false, "s"], "e": {}, "l": [], "o": {"k": [[0.5]]}})");
}

TEST(PythonJsonTest, OneLineLayout) {
  std::string out;
  AppendPythonJson(Sample(), -1, &out);
  EXPECT_EQ(out,
            R"({"z": 1, "a": [1.0, -2, null, true, false, "s"], "e": {}, "l": [], )"
            R"("o": {"k": [[0.5]]}})");
}

TEST(PythonJsonTest, IndentedLayout) {
  std::string out;
  AppendPythonJson(Sample(), 4, &out);
  const char* const kWant =
      "{\n"
      "    \"z\": 1,\n"
      "    \"a\": [\n"
      "        1.0,\n"
      "        -2,\n"
      "        null,\n"
      "        true,\n"
      "        false,\n"
      "        \"s\"\n"
      "    ],\n"
      "    \"e\": {},\n"
      "    \"l\": [],\n"
      "    \"o\": {\n"
      "        \"k\": [\n"
      "            [\n"
      "                0.5\n"
      "            ]\n"
      "        ]\n"
      "    }\n"
      "}";
  EXPECT_EQ(out, kWant);
}

TEST(PythonJsonTest, ScalarsAndBigIntegers) {
  std::string out;
  AppendPythonJson(nlohmann::ordered_json::parse("18446744073709551615"), 4, &out);
  EXPECT_EQ(out, "18446744073709551615");
  out.clear();
  AppendPythonJson(nlohmann::ordered_json::parse("-9223372036854775808"), -1, &out);
  EXPECT_EQ(out, "-9223372036854775808");
  out.clear();
  AppendPythonJson(nlohmann::ordered_json::parse("1e2"), -1, &out);  // a float in JSON stays one
  EXPECT_EQ(out, "100.0");
  out.clear();
  AppendPythonJson(nlohmann::ordered_json::parse("{}"), 4, &out);
  EXPECT_EQ(out, "{}");
}

}  // namespace
}  // namespace packfs
