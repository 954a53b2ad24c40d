#include "kope/task/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kope {
namespace {

// A binary floating-point format narrower than double: `exp_bits` exponent
// bits and `man_bits` stored mantissa bits, IEEE 754 layout.
struct NarrowFormat {
  int exp_bits;
  int man_bits;
};
constexpr NarrowFormat kHalf{5, 10};
constexpr NarrowFormat kBFloat16{8, 7};

uint64_t DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

// Shifts `value` right by `shift` bits, rounding to nearest with ties to even.
uint64_t ShiftRightRoundEven(uint64_t value, int shift) {
  if (shift <= 0) return value;
  if (shift >= 64) return 0;  // callers only pass values below 2^54, so below one half
  const uint64_t quotient = value >> shift;
  const uint64_t remainder = value & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (remainder > half || (remainder == half && (quotient & 1) != 0)) return quotient + 1;
  return quotient;
}

// Rounds `d` to `format` (round to nearest, ties to even; overflow to
// infinity; subnormals kept; NaN stays NaN with the sign and top payload bits).
uint16_t EncodeNarrow(double d, NarrowFormat format) {
  const uint64_t bits = DoubleBits(d);
  const uint16_t sign = static_cast<uint16_t>((bits >> 63) << (format.exp_bits + format.man_bits));
  const int exp_field = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t man_field = bits & ((uint64_t{1} << 52) - 1);
  const uint16_t max_exp = static_cast<uint16_t>((1 << format.exp_bits) - 1);
  const uint16_t inf = static_cast<uint16_t>(max_exp << format.man_bits);

  if (exp_field == 0x7FF) {
    if (man_field == 0) return sign | inf;
    const uint16_t payload = static_cast<uint16_t>(man_field >> (52 - format.man_bits));
    const uint16_t quiet = static_cast<uint16_t>(1 << (format.man_bits - 1));
    return sign | inf | payload | quiet;
  }
  // Zero, and double subnormals (below 2^-1022, far below half the smallest
  // subnormal of either narrow format), become a signed zero.
  if (exp_field == 0) return sign;

  const int bias = (1 << (format.exp_bits - 1)) - 1;
  const int exponent = exp_field - 1023;  // d = 1.m * 2^exponent
  const uint64_t significand = man_field | (uint64_t{1} << 52);
  const int min_exponent = 1 - bias;
  if (exponent >= min_exponent) {
    uint64_t rounded = ShiftRightRoundEven(significand, 52 - format.man_bits);
    int biased = exponent + bias;
    if (rounded == (uint64_t{1} << (format.man_bits + 1))) {  // rounded up to the next power of 2
      rounded >>= 1;
      ++biased;
    }
    if (biased >= max_exp) return sign | inf;
    const uint64_t man_mask = (uint64_t{1} << format.man_bits) - 1;
    return sign | static_cast<uint16_t>((biased << format.man_bits) | (rounded & man_mask));
  }
  // Subnormal in the narrow format: units of 2^(min_exponent - man_bits).
  // A result of exactly 2^man_bits is the smallest normal, which has the same bits.
  const int shift = 52 - format.man_bits + (min_exponent - exponent);
  return sign | static_cast<uint16_t>(ShiftRightRoundEven(significand, shift));
}

double DecodeNarrow(uint16_t h, NarrowFormat format) {
  const bool negative = (h >> (format.exp_bits + format.man_bits)) & 1;
  const int exp_field = (h >> format.man_bits) & ((1 << format.exp_bits) - 1);
  const uint32_t man_field = h & ((1u << format.man_bits) - 1);
  const int bias = (1 << (format.exp_bits - 1)) - 1;
  double magnitude;
  if (exp_field == (1 << format.exp_bits) - 1) {
    if (man_field == 0) {
      magnitude = std::numeric_limits<double>::infinity();
    } else {
      // Keep the payload: place the narrow mantissa at the top of double's.
      const uint64_t bits =
          (uint64_t{0x7FF} << 52) | (uint64_t{man_field} << (52 - format.man_bits));
      std::memcpy(&magnitude, &bits, sizeof magnitude);
    }
  } else if (exp_field == 0) {
    magnitude = std::ldexp(static_cast<double>(man_field), 1 - bias - format.man_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(man_field | (1u << format.man_bits)),
                           exp_field - bias - format.man_bits);
  }
  return negative ? -magnitude : magnitude;
}

// Round to nearest (ties to even) and clamp into [lo, hi]; NaN becomes 0.
template <typename Int>
Int SaturatingRound(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  // 2^(bits-1) is exactly representable as a double; anything at or past it saturates.
  const double limit = std::ldexp(1.0, std::numeric_limits<Int>::digits);
  if (r >= limit) return std::numeric_limits<Int>::max();
  if (r < -limit) return std::numeric_limits<Int>::min();
  return static_cast<Int>(r);
}

float DoubleToFloat(double v) {
  // Out-of-range conversion is undefined in C++; round as IEEE 754 does.
  constexpr double kMax = std::numeric_limits<float>::max();
  if (std::isfinite(v) && std::fabs(v) > kMax) {
    const double halfway = kMax + std::ldexp(1.0, 103);  // FLT_MAX + half an ulp of it
    const float big = std::fabs(v) >= halfway ? std::numeric_limits<float>::infinity()
                                              : std::numeric_limits<float>::max();
    return v < 0 ? -big : big;
  }
  return static_cast<float>(v);
}

template <typename T>
T LoadElement(const void* data, size_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void StoreElement(void* data, size_t i, T value) {
  std::memcpy(static_cast<char*>(data) + i * sizeof(T), &value, sizeof(T));
}

}  // namespace

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case KOPE_F32:
      return "f32";
    case KOPE_F64:
      return "f64";
    case KOPE_F16:
      return "f16";
    case KOPE_BF16:
      return "bf16";
    case KOPE_I32:
      return "i32";
    case KOPE_I64:
      return "i64";
    case KOPE_BOOL:
      return "bool";
  }
  return "unknown";
}

std::optional<DType> ParseDType(std::string_view name) {
  for (DType d : {KOPE_F32, KOPE_F64, KOPE_F16, KOPE_BF16, KOPE_I32, KOPE_I64, KOPE_BOOL}) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case KOPE_BOOL:
      return 1;
    case KOPE_F16:
    case KOPE_BF16:
      return 2;
    case KOPE_F32:
    case KOPE_I32:
      return 4;
    case KOPE_F64:
    case KOPE_I64:
      return 8;
  }
  return 0;
}

bool IsFloating(DType dtype) {
  return dtype == KOPE_F32 || dtype == KOPE_F64 || dtype == KOPE_F16 || dtype == KOPE_BF16;
}

double LoadAsDouble(const void* data, DType dtype, size_t i) {
  switch (dtype) {
    case KOPE_F32:
      return LoadElement<float>(data, i);
    case KOPE_F64:
      return LoadElement<double>(data, i);
    case KOPE_F16:
      return DecodeNarrow(LoadElement<uint16_t>(data, i), kHalf);
    case KOPE_BF16:
      return DecodeNarrow(LoadElement<uint16_t>(data, i), kBFloat16);
    case KOPE_I32:
      return LoadElement<int32_t>(data, i);
    case KOPE_I64:
      return static_cast<double>(LoadElement<int64_t>(data, i));
    case KOPE_BOOL:  // the byte as it is: anything but 0 or 1 is not a bool, and compares so
      return LoadElement<uint8_t>(data, i);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void StoreFromDouble(void* data, DType dtype, size_t i, double v) {
  switch (dtype) {
    case KOPE_F32:
      StoreElement(data, i, DoubleToFloat(v));
      return;
    case KOPE_F64:
      StoreElement(data, i, v);
      return;
    case KOPE_F16:
      StoreElement(data, i, EncodeNarrow(v, kHalf));
      return;
    case KOPE_BF16:
      StoreElement(data, i, EncodeNarrow(v, kBFloat16));
      return;
    case KOPE_I32:
      StoreElement(data, i, SaturatingRound<int32_t>(v));
      return;
    case KOPE_I64:
      StoreElement(data, i, SaturatingRound<int64_t>(v));
      return;
    case KOPE_BOOL:
      StoreElement(data, i, static_cast<uint8_t>(v != 0 ? 1 : 0));
      return;
  }
}

// float -> double is exact, so rounding from double rounds once, correctly.
uint16_t FloatToHalf(float f) { return EncodeNarrow(f, kHalf); }
float HalfToFloat(uint16_t h) { return static_cast<float>(DecodeNarrow(h, kHalf)); }
uint16_t FloatToBFloat16(float f) { return EncodeNarrow(f, kBFloat16); }
float BFloat16ToFloat(uint16_t b) {
  // bf16 is the upper half of an f32, bit for bit (NaN payloads included).
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace kope
