// The checking contract's golden vectors (testdata/contract/compare.json and draw.json), on the
// C++ side: CompareOutputs gives every case's verdict and first-failure report, FillInput
// draws every case's values (the same ones, pinned) and they follow the case's law.
// python/kope_bridge/contract_compare_test.py and contract_draw_test.py check the bridge
// against the same files. With KOPE_CONTRACT_REGENERATE=1 the C++ answers are written into
// the files instead (testdata/contract/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kope/base/hash.h"
#include "kope/eval/compare.h"
#include "kope/eval/inputs.h"
#include "kope/task/task.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

using Json = nlohmann::ordered_json;

const std::string kDir = kope::testing::SourceDir() + "/testdata/contract/";

bool Regenerating() { return std::getenv("KOPE_CONTRACT_REGENERATE") != nullptr; }

Json ReadJson(const std::string& name) {
  std::ifstream in(kDir + name);
  EXPECT_TRUE(in.good()) << kDir + name;
  return Json::parse(in);
}

void WriteJson(const std::string& name, const Json& data) {
  std::ofstream(kDir + name) << data.dump(1) << "\n";
}

// A double as the files write it: a hex float, nan, inf or -inf.
std::string Hex(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[64];
  std::snprintf(text, sizeof(text), "%a", v);
  return text;
}

double Number(const Json& v) {
  if (v.is_number()) return v.get<double>();
  return std::strtod(v.get<std::string>().c_str(), nullptr);
}

// The same double, NaN for NaN, and a zero's sign.
bool Same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

DType DTypeOf(const Json& name) {
  std::optional<DType> dtype = ParseDType(name.get<std::string>());
  EXPECT_TRUE(dtype.has_value()) << name;
  return dtype.value_or(KOPE_F32);
}

// Element i's bytes from its file value: raw bits, an integer, or a value of the dtype.
void StoreElement(std::vector<uint8_t>* bytes, DType dtype, size_t i, const Json& v) {
  uint8_t* at = bytes->data() + i * DTypeSize(dtype);
  if (v.is_string() && v.get<std::string>().rfind("bits:", 0) == 0) {
    uint64_t bits = std::strtoull(v.get<std::string>().c_str() + 5, nullptr, 16);
    std::memcpy(at, &bits, DTypeSize(dtype));  // little-endian: the low bytes
  } else if (dtype == KOPE_I64) {
    int64_t x = v.get<int64_t>();
    std::memcpy(at, &x, sizeof(x));
  } else if (dtype == KOPE_I32) {
    int32_t x = v.get<int32_t>();
    std::memcpy(at, &x, sizeof(x));
  } else {
    const double x = Number(v);
    StoreFromDouble(bytes->data(), dtype, i, x);
    EXPECT_TRUE(Same(LoadAsDouble(bytes->data(), dtype, i), x))
        << v << " is no " << DTypeName(dtype);
  }
}

// A tensor's bytes from its file form: a list, or {count, fill, at: {index: value}}.
std::vector<uint8_t> Elements(const Json& values, DType dtype) {
  const bool listed = values.is_array();
  const size_t count = listed ? values.size() : values["count"].get<size_t>();
  std::vector<uint8_t> bytes(count * DTypeSize(dtype));
  for (size_t i = 0; i < count; ++i) {
    StoreElement(&bytes, dtype, i, listed ? values[i] : values["fill"]);
  }
  if (!listed && values.contains("at")) {
    for (const auto& [index, v] : values["at"].items()) {
      StoreElement(&bytes, dtype, std::stoull(index), v);
    }
  }
  return bytes;
}

Json Report(const Comparison& c, const std::vector<int64_t>& shape) {
  Json r = {{"ok", c.ok}, {"mismatches", c.mismatches}, {"first_index", c.first_index}};
  if (c.first_index >= 0) {
    r["first_multi_index"] = Unravel(c.first_index, shape);
    r["expected"] = Hex(c.expected);
    r["actual"] = Hex(c.actual);
    r["error"] = Hex(std::fabs(c.actual - c.expected));
    r["nan_inf_mismatch"] = c.nan_inf_mismatch;
  }
  r["max_abs_error"] = Hex(c.max_abs_error);
  r["max_rel_error"] = Hex(c.max_rel_error);
  return r;
}

void ExpectSameReport(const Json& want, const Json& got) {
  ASSERT_EQ(want.size(), got.size()) << "want " << want << "\ngot " << got;
  for (const auto& [key, value] : want.items()) {
    if (value.is_string()) {
      EXPECT_TRUE(Same(Number(value), Number(got[key])))
          << key << ": want " << value << ", got " << got[key];
    } else {
      EXPECT_EQ(value, got[key]) << key;
    }
  }
}

TEST(CompareContract, EveryCaseGivesItsVerdictAndFirstFailure) {
  Json file = ReadJson("compare.json");
  for (Json& c : file["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const DType dtype = DTypeOf(c["dtype"]);
    const std::vector<uint8_t> e = Elements(c["expected"], dtype);
    const std::vector<uint8_t> a = Elements(c["actual"], dtype);
    ASSERT_EQ(e.size(), a.size());
    const Tolerance tolerance{Number(c["rtol"]), Number(c["atol"])};
    const Comparison got =
        CompareOutputs(e.data(), a.data(), dtype, e.size() / DTypeSize(dtype), tolerance);
    const Json report = Report(got, c["shape"].get<std::vector<int64_t>>());
    if (Regenerating()) {
      c["verdict"] = report;
    } else {
      ASSERT_TRUE(c.contains("verdict"));
      ExpectSameReport(c["verdict"], report);
    }
  }
  if (Regenerating()) WriteJson("compare.json", file);
}

Distribution FromFile(const Json& fields) {
  Distribution d;
  for (int k = 0; k <= static_cast<int>(Distribution::Kind::kPositive); ++k) {
    auto kind = static_cast<Distribution::Kind>(k);
    const Json& name = fields["kind"];
    if (name.is_string() ? DistributionKindName(kind) == name.get<std::string>() : name == k) {
      d.kind = kind;
    }
  }
  if (fields.contains("mean")) d.mean = Number(fields["mean"]);
  if (fields.contains("stddev")) d.stddev = Number(fields["stddev"]);
  if (fields.contains("low")) d.low = Number(fields["low"]);
  if (fields.contains("high")) d.high = Number(fields["high"]);
  if (fields.contains("low_exp")) d.low_exp = Number(fields["low_exp"]);
  if (fields.contains("high_exp")) d.high_exp = Number(fields["high_exp"]);
  if (fields.contains("num_distinct")) d.num_distinct = fields["num_distinct"].get<int>();
  if (fields.contains("fan_in")) {
    Result<Expr> fan_in = Expr::Parse(fields["fan_in"].get<std::string>());
    EXPECT_TRUE(fan_in.ok());
    if (fan_in.ok()) d.fan_in = *fan_in;
  }
  return d;
}

void ExpectSameFields(const Json& want, const Distribution& got) {
  EXPECT_EQ(want["kind"].get<int>(), static_cast<int>(got.kind));
  EXPECT_TRUE(Same(Number(want["mean"]), got.mean));
  EXPECT_TRUE(Same(Number(want["stddev"]), got.stddev));
  EXPECT_TRUE(Same(Number(want["low"]), got.low));
  EXPECT_TRUE(Same(Number(want["high"]), got.high));
  EXPECT_TRUE(Same(Number(want["low_exp"]), got.low_exp));
  EXPECT_TRUE(Same(Number(want["high_exp"]), got.high_exp));
  EXPECT_EQ(want["num_distinct"].get<int>(), got.num_distinct);
}

// Whether every value passes `test` where the law has `key`.
template <typename Test>
void ExpectEvery(const Json& law, const char* key, const std::vector<double>& v, Test test) {
  if (!law.contains(key)) return;
  const auto bad = std::find_if_not(v.begin(), v.end(), test);
  EXPECT_TRUE(bad == v.end()) << key << " " << law[key] << " fails for " << *bad;
}

// The checks of a case's law (testdata/contract/README.md), over values widened to double.
void ExpectLaw(const Json& law, const std::vector<double>& v) {
  ExpectEvery(law, "finite", v, [](double x) { return std::isfinite(x); });
  ExpectEvery(law, "integral", v, [](double x) { return x == std::floor(x); });
  ExpectEvery(law, "min", v, [&](double x) { return x >= Number(law["min"]); });
  ExpectEvery(law, "max", v, [&](double x) { return x <= Number(law["max"]); });
  ExpectEvery(law, "min_abs", v, [&](double x) { return std::fabs(x) >= Number(law["min_abs"]); });
  ExpectEvery(law, "max_abs", v, [&](double x) { return std::fabs(x) <= Number(law["max_abs"]); });
  if (law.contains("both_signs")) {
    EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](double x) { return x < 0; }));
    EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](double x) { return x > 0; }));
  }
  if (law.contains("values")) {
    std::set<double> want;
    for (const Json& x : law["values"]) want.insert(Number(x));
    EXPECT_EQ(std::set<double>(v.begin(), v.end()), want);
  }
  double sum = 0, squares = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  for (double x : v) squares += (x - mean) * (x - mean);
  const double stddev = std::sqrt(squares / static_cast<double>(v.size()));
  if (law.contains("mean")) {
    EXPECT_GE(mean, Number(law["mean"][0]));
    EXPECT_LE(mean, Number(law["mean"][1]));
  }
  if (law.contains("stddev")) {
    EXPECT_GE(stddev, Number(law["stddev"][0]));
    EXPECT_LE(stddev, Number(law["stddev"][1]));
  }
}

TEST(DrawContract, EveryCaseDrawsItsPinnedValuesByItsLaw) {
  Json file = ReadJson("draw.json");
  for (Json& c : file["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const DType dtype = DTypeOf(c["dtype"]);
    SizeSet set{"golden", {}};
    if (c.contains("sizes")) set.sizes = c["sizes"].get<std::map<std::string, int64_t>>();
    Result<Distribution> d = DistributionAt(FromFile(c["distribution"]), set);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ExpectSameFields(c["at_sizes"], *d);
    ExpectSameFields(c["at_sizes"], FromFile(c["at_sizes"]));

    const size_t count = c["count"].get<size_t>();
    std::vector<uint8_t> bytes(count * DTypeSize(dtype));
    std::mt19937_64 rng(c["seed"].get<uint64_t>());
    FillInput(bytes.data(), dtype, count, *d, rng);
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i) values[i] = LoadAsDouble(bytes.data(), dtype, i);
    ExpectLaw(c["law"], values);

    Json pinned = {{"first", Json::array()},
                   {"content_hash", ContentHash(std::string(bytes.begin(), bytes.end()))}};
    for (size_t i = 0; i < std::min<size_t>(count, 16); ++i) {
      pinned["first"].push_back(Hex(values[i]));
    }
    if (Regenerating()) {
      c["cpp"] = pinned;
    } else {
      ASSERT_TRUE(c.contains("cpp"));
      EXPECT_EQ(c["cpp"]["content_hash"], pinned["content_hash"]);
      for (size_t i = 0; i < pinned["first"].size(); ++i) {
        EXPECT_TRUE(Same(Number(c["cpp"]["first"][i]), values[i])) << "element " << i;
      }
    }
  }
  if (Regenerating()) WriteJson("draw.json", file);
}

}  // namespace
}  // namespace kope
