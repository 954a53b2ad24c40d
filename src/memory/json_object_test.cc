// IsJsonObject gives the full parser's answer, and its quick scan never accepts what the full
// parser rejects: known cases, then many generated near-JSON texts.
#include "json_object.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace kope::memory {
namespace {

bool Reference(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' && nlohmann::json::accept(text);
}

TEST(JsonObjectTest, KnownCases) {
  const std::pair<std::string, bool> cases[] = {
      {"{}", true},
      {" \n{ }\t", true},
      {R"({"median_ms":1.0,"spread":0.01,"runs":25})", true},
      {R"({"a":[1,-2,3.5,{"b":null}],"c":true,"d":false,"e":"x y"})", true},
      {R"({"esc":"a\"b\u00e9"})", true},     // escapes: the full parser
      {"{\"utf8\":\"caf\xc3\xa9\"}", true},  // non-ASCII: the full parser
      {R"({"big":1e5,"neg":-0,"exp":2E-3})", true},
      {R"({"overflow":1e400})", false},
      {R"({"lead":01})", false},
      {R"({"frac":1.})", false},
      {R"({"a":1,})", false},
      {R"({"a" 1})", false},
      {R"({'a':1})", false},
      {"{\"ctl\":\"a\x01\"}", false},
      {"{\"bad\":\"\xff\"}", false},
      {"[1]", false},
      {"1", false},
      {"", false},
      {"{} {}", false},
      {"{\"a\":tru}", false},
      {"{\"a\":nul}", false},
      {"{\"a\":[}", false},
  };
  for (const auto& [text, valid] : cases) {
    EXPECT_EQ(IsJsonObject(text), valid) << text;
    EXPECT_EQ(Reference(text), valid) << text;
    if (IsPlainJsonObject(text)) {
      EXPECT_TRUE(valid) << text;
    }
  }
  EXPECT_TRUE(IsPlainJsonObject(R"({"median_ms":1.0,"spread":0.01,"runs":25})"));
  std::string deep(100, '[');
  EXPECT_TRUE(IsJsonObject("{\"a\":" + deep + std::string(100, ']') + "}"));
  EXPECT_FALSE(IsJsonObject("{\"a\":" + deep + std::string(99, ']') + "}"));
}

// Random texts from JSON's pieces, and valid documents with one byte changed.
TEST(JsonObjectTest, AgreesWithTheFullParserOnGeneratedTexts) {
  const char* pieces[] = {
      "{",      "}",    "[",     "]",    ":",  ",",       "\"a\"", "\"",       "1",
      "0",      "-",    ".",     "e",    "E",  "+",       "25",    " ",        "\n",
      "\t",     "true", "fals",  "null", "\\", "u",       "\x01",  "\xc3\xa9", "\xff",
      "\"k\":", "1.5",  "-0.25", "9e9",  "00", "\"x y\"", "\x7f"};
  std::mt19937 rng(11);
  int plain = 0, valid = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string text = rng() % 2 == 0 ? "{" : "";
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) text += pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
    if (rng() % 2 == 0) text += "}";
    const bool expected = Reference(text);
    ASSERT_EQ(IsJsonObject(text), expected) << text;
    if (IsPlainJsonObject(text)) {
      ASSERT_TRUE(expected) << text;
      ++plain;
    }
    valid += expected;
  }
  for (int i = 0; i < 50000; ++i) {
    nlohmann::json doc = nlohmann::json::object();
    const int fields = static_cast<int>(rng() % 5);
    for (int f = 0; f < fields; ++f) {
      const std::string key = "k" + std::to_string(rng() % 100);
      switch (rng() % 5) {
        case 0:
          doc[key] = static_cast<double>(rng() % 100000) / 100.0;
          break;
        case 1:
          doc[key] = static_cast<int>(rng() % 1000) - 500;
          break;
        case 2:
          doc[key] = "s" + std::to_string(rng());
          break;
        case 3:
          doc[key] = nlohmann::json::array({1, "two", nullptr, true});
          break;
        default:
          doc[key] = nlohmann::json::object({{"inner", rng() % 2 == 0}});
      }
    }
    std::string text = doc.dump(rng() % 2 == 0 ? -1 : 1);
    ASSERT_TRUE(IsJsonObject(text)) << text;
    plain += IsPlainJsonObject(text);
    text[rng() % text.size()] = *pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
    const bool expected = Reference(text);
    ASSERT_EQ(IsJsonObject(text), expected) << text;
    if (IsPlainJsonObject(text)) {
      ASSERT_TRUE(expected) << text;
    }
  }
  // The generated texts exercise both paths.
  EXPECT_GT(plain, 10000);
  EXPECT_GT(valid, 1000);
}

}  // namespace
}  // namespace kope::memory
