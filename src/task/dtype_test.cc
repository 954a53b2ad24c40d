#include "kope/task/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace kope {
namespace {

uint16_t Bits(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The classic bit trick for f32 -> bf16 with round-to-nearest-even, as an
// independent oracle for finite inputs.
uint16_t BFloat16Oracle(float f) {
  const uint32_t b = Bits(f);
  return static_cast<uint16_t>((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}

uint16_t StoreHalf(double v) {
  uint16_t out;
  StoreFromDouble(&out, KOPE_F16, 0, v);
  return out;
}

uint16_t StoreBFloat16(double v) {
  uint16_t out;
  StoreFromDouble(&out, KOPE_BF16, 0, v);
  return out;
}

TEST(DTypeTest, NamesRoundTrip) {
  for (DType d : {KOPE_F32, KOPE_F64, KOPE_F16, KOPE_BF16, KOPE_I32, KOPE_I64, KOPE_BOOL}) {
    std::optional<DType> parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.has_value()) << DTypeName(d);
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(DTypeName(KOPE_BF16), "bf16");
  EXPECT_FALSE(ParseDType("f8").has_value());
  EXPECT_FALSE(ParseDType("F32").has_value());
  EXPECT_FALSE(ParseDType("").has_value());
}

TEST(DTypeTest, SizesAndKinds) {
  EXPECT_EQ(DTypeSize(KOPE_F32), 4u);
  EXPECT_EQ(DTypeSize(KOPE_F64), 8u);
  EXPECT_EQ(DTypeSize(KOPE_F16), 2u);
  EXPECT_EQ(DTypeSize(KOPE_BF16), 2u);
  EXPECT_EQ(DTypeSize(KOPE_I32), 4u);
  EXPECT_EQ(DTypeSize(KOPE_I64), 8u);
  EXPECT_TRUE(IsFloating(KOPE_BF16));
  EXPECT_TRUE(IsFloating(KOPE_F64));
  EXPECT_FALSE(IsFloating(KOPE_I32));
  EXPECT_FALSE(IsFloating(KOPE_I64));
  EXPECT_EQ(DTypeSize(KOPE_BOOL), 1u);
  EXPECT_FALSE(IsFloating(KOPE_BOOL));
  EXPECT_EQ(DTypeName(KOPE_BOOL), "bool");
}

TEST(DTypeTest, BoolStoresZeroOrOneAndLoadsTheByteAsItIs) {
  uint8_t b[4] = {7, 7, 7, 0xde};
  StoreFromDouble(b, KOPE_BOOL, 0, 0.0);
  StoreFromDouble(b, KOPE_BOOL, 1, 1.0);
  StoreFromDouble(b, KOPE_BOOL, 2, -3.5);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[2], 1);
  EXPECT_EQ(LoadAsDouble(b, KOPE_BOOL, 1), 1.0);
  EXPECT_EQ(LoadAsDouble(b, KOPE_BOOL, 3), 222.0);  // not a bool: never equal to one
}

TEST(DTypeTest, HalfKnownValues) {
  struct Case {
    double value;
    uint16_t bits;
  };
  const double sub = std::ldexp(1.0, -24);  // smallest f16 subnormal
  const Case cases[] = {
      {1.0, 0x3C00},
      {-2.0, 0xC000},
      {0.0, 0x0000},
      {-0.0, 0x8000},
      {65504.0, 0x7BFF},   // largest finite
      {65519.99, 0x7BFF},  // just below the midpoint to infinity
      {65520.0, 0x7C00},   // midpoint: ties to even, which is infinity
      {1e10, 0x7C00},
      {-1e10, 0xFC00},
      {sub, 0x0001},
      {sub / 2, 0x0000},  // tie between 0 and 1 ulp: even is 0
      {sub / 2 * 1.0001, 0x0001},
      {3 * sub / 2, 0x0002},                     // tie between 1 and 2: even is 2
      {1023 * sub, 0x03FF},                      // largest subnormal
      {1023.5 * sub, 0x0400},                    // rounds up into the smallest normal
      {std::ldexp(1.0, -14), 0x0400},            // smallest normal
      {1.0 + std::ldexp(1.0, -11), 0x3C00},      // tie: even mantissa 0
      {1.0 + 3 * std::ldexp(1.0, -11), 0x3C02},  // tie: even mantissa 2
      {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 0x3C01},  // no double rounding
      {std::numeric_limits<double>::denorm_min(), 0x0000},
      {1e-300, 0x0000},
      {-1e-300, 0x8000},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(StoreHalf(c.value), c.bits) << c.value;
  }
}

TEST(DTypeTest, HalfSpecialValues) {
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lies only in the low bits must not become infinity.
  const float low_payload_nan = FromBits(0x7F800001);
  ASSERT_TRUE(std::isnan(low_payload_nan));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(low_payload_nan))));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(low_payload_nan))));
  EXPECT_TRUE(std::signbit(HalfToFloat(FloatToHalf(-std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7C01)));
}

TEST(DTypeTest, EveryHalfRoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = HalfToFloat(h);
    if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << b;
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f)))) << std::hex << b;
      continue;
    }
    // Decoding agrees with the compiler's own _Float16.
    _Float16 expected;
    std::memcpy(&expected, &h, sizeof h);
    EXPECT_EQ(f, static_cast<float>(expected)) << std::hex << b;
    EXPECT_EQ(FloatToHalf(f), h) << std::hex << b;
  }
}

TEST(DTypeTest, HalfMidpointsRoundToEven) {
  // Between every pair of neighbouring positive finite halves: the midpoint
  // goes to the even one, anything off it goes to the nearer one.
  for (uint16_t a = 0; a < 0x7BFF; ++a) {
    const uint16_t b = static_cast<uint16_t>(a + 1);
    const double lo = HalfToFloat(a);
    const double hi = HalfToFloat(b);
    const double mid = (lo + hi) / 2;
    const uint16_t even = (a & 1) == 0 ? a : b;
    ASSERT_EQ(StoreHalf(mid), even) << std::hex << a;
    ASSERT_EQ(StoreHalf(std::nextafter(mid, 0.0)), a) << std::hex << a;
    ASSERT_EQ(StoreHalf(std::nextafter(mid, 1e9)), b) << std::hex << a;
    ASSERT_EQ(StoreHalf(-mid), even | 0x8000) << std::hex << a;
  }
}

TEST(DTypeTest, HalfMatchesCompilerOnManyFloats) {
  // A stride through all f32 bit patterns, finite or not.
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 9973) {
    const float f = FromBits(static_cast<uint32_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), Bits(static_cast<_Float16>(f))) << std::hex << b;
    const double d = static_cast<double>(f) * (1.0 + 1e-9);
    ASSERT_EQ(StoreHalf(d), Bits(static_cast<_Float16>(d))) << std::hex << b;
  }
}

TEST(DTypeTest, BFloat16KnownValues) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);        // tie: even
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);    // tie: even
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to infinity
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::denorm_min()), 0x0000);  // tie to 0
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00010000)), 0x0001);  // smallest bf16 subnormal
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00018000)), 0x0002);  // tie between 1 and 2
  EXPECT_EQ(StoreBFloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 0x3F81);
  EXPECT_EQ(StoreBFloat16(1e39), 0x7F80);
  EXPECT_EQ(StoreBFloat16(-1e39), 0xFF80);
  EXPECT_EQ(BFloat16ToFloat(0x3F80), 1.0f);
  EXPECT_TRUE(std::isinf(BFloat16ToFloat(0xFF80)));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(0x7FC0)));
  EXPECT_TRUE(std::isnan(LoadAsDouble(std::vector<uint16_t>{0x7F81}.data(), KOPE_BF16, 0)));
}

TEST(DTypeTest, EveryBFloat16RoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = BFloat16ToFloat(h);
    EXPECT_EQ(Bits(f), b << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(f))));
      continue;
    }
    EXPECT_EQ(FloatToBFloat16(f), h) << std::hex << b;
    EXPECT_EQ(LoadAsDouble(&h, KOPE_BF16, 0), static_cast<double>(f)) << std::hex << b;
  }
}

TEST(DTypeTest, BFloat16MatchesBitTrickOnManyFloats) {
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 7919) {
    const float f = FromBits(static_cast<uint32_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBFloat16(f), BFloat16Oracle(f)) << std::hex << b;
  }
}

TEST(DTypeTest, LoadStoreFloats) {
  std::vector<float> f32(3);
  StoreFromDouble(f32.data(), KOPE_F32, 1, 0.1);
  EXPECT_EQ(f32[1], 0.1f);
  EXPECT_EQ(LoadAsDouble(f32.data(), KOPE_F32, 1), static_cast<double>(0.1f));
  StoreFromDouble(f32.data(), KOPE_F32, 0, 1e39);
  EXPECT_TRUE(std::isinf(f32[0]) && f32[0] > 0);
  StoreFromDouble(f32.data(), KOPE_F32, 0, -1e39);
  EXPECT_TRUE(std::isinf(f32[0]) && f32[0] < 0);
  const double flt_max = std::numeric_limits<float>::max();
  StoreFromDouble(f32.data(), KOPE_F32, 0, flt_max + std::ldexp(1.0, 102));  // below half an ulp
  EXPECT_EQ(f32[0], std::numeric_limits<float>::max());
  StoreFromDouble(f32.data(), KOPE_F32, 0, flt_max + std::ldexp(1.0, 103));  // the tie: to inf
  EXPECT_TRUE(std::isinf(f32[0]));
  StoreFromDouble(f32.data(), KOPE_F32, 2, std::nan(""));
  EXPECT_TRUE(std::isnan(f32[2]));

  std::vector<double> f64(2);
  StoreFromDouble(f64.data(), KOPE_F64, 1, 0.1);
  EXPECT_EQ(f64[1], 0.1);
  EXPECT_EQ(LoadAsDouble(f64.data(), KOPE_F64, 1), 0.1);

  std::vector<uint16_t> f16(4);
  StoreFromDouble(f16.data(), KOPE_F16, 3, -1.5);
  EXPECT_EQ(f16[3], 0xBE00);
  EXPECT_EQ(LoadAsDouble(f16.data(), KOPE_F16, 3), -1.5);
  EXPECT_EQ(f16[0], 0);  // neighbours untouched
}

TEST(DTypeTest, IntegersRoundAndSaturate) {
  std::vector<int32_t> i32(1);
  auto store32 = [&](double v) {
    StoreFromDouble(i32.data(), KOPE_I32, 0, v);
    return i32[0];
  };
  EXPECT_EQ(store32(42.0), 42);
  EXPECT_EQ(store32(2.5), 2);  // ties to even
  EXPECT_EQ(store32(3.5), 4);
  EXPECT_EQ(store32(-2.5), -2);
  EXPECT_EQ(store32(2.6), 3);
  EXPECT_EQ(store32(1e20), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(store32(-1e20), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(store32(2147483647.0), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(store32(-2147483648.0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(store32(std::numeric_limits<double>::infinity()), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(store32(std::nan("")), 0);
  EXPECT_EQ(LoadAsDouble(i32.data(), KOPE_I32, 0), 0.0);
  i32[0] = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(LoadAsDouble(i32.data(), KOPE_I32, 0), -2147483648.0);

  std::vector<int64_t> i64(1);
  auto store64 = [&](double v) {
    StoreFromDouble(i64.data(), KOPE_I64, 0, v);
    return i64[0];
  };
  EXPECT_EQ(store64(std::ldexp(1.0, 63)), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(store64(-std::ldexp(1.0, 63)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(store64(-std::ldexp(1.0, 64)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(store64(std::ldexp(1.0, 53)), int64_t{1} << 53);
  EXPECT_EQ(store64(-7.0), -7);
  EXPECT_EQ(LoadAsDouble(i64.data(), KOPE_I64, 0), -7.0);
}

}  // namespace
}  // namespace kope
