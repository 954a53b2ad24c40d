#include "kope/eval/inputs.h"

#include <cmath>
#include <cstring>

namespace kope {
namespace {

double Draw(const Distribution& d, std::mt19937_64& rng) {
  switch (d.kind) {
    case Distribution::Kind::kNormal:
      return std::normal_distribution<double>(d.mean, d.stddev)(rng);
    case Distribution::Kind::kUniform:
    case Distribution::Kind::kPositive:
      return std::uniform_real_distribution<double>(d.low, d.high)(rng);
    case Distribution::Kind::kWide: {
      double e = std::uniform_real_distribution<double>(d.low_exp, d.high_exp)(rng);
      double sign = (rng() & 1) ? 1.0 : -1.0;
      return sign * std::pow(10.0, e);
    }
    case Distribution::Kind::kNegative:
      return -std::fabs(std::normal_distribution<double>(0.0, d.stddev)(rng)) - 1e-3;
    case Distribution::Kind::kTies: {
      int k = std::max(1, d.num_distinct);
      auto pick = std::uniform_int_distribution<int>(0, k - 1)(rng);
      // Evenly spaced values around zero, exactly representable in every float type.
      return (pick - k / 2) * 0.5;
    }
  }
  return 0.0;
}

}  // namespace

void FillInput(void* data, DType dtype, size_t count, const Distribution& dist,
               std::mt19937_64& rng) {
  if (!IsFloating(dtype)) {
    // Integer ranges: [low, high), defaulting to [0, 100) when the range is empty.
    int64_t lo = static_cast<int64_t>(std::floor(dist.low));
    int64_t hi = static_cast<int64_t>(std::ceil(dist.high));
    if (hi <= lo) {
      lo = 0;
      hi = 100;
    }
    std::uniform_int_distribution<int64_t> uniform(lo, hi - 1);
    for (size_t i = 0; i < count; ++i) {
      StoreFromDouble(data, dtype, i, static_cast<double>(uniform(rng)));
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) StoreFromDouble(data, dtype, i, Draw(dist, rng));
}

void FillPoison(void* data, DType dtype, size_t count, Poison poison) {
  auto fill = [&](auto pattern) {
    auto* p = static_cast<decltype(pattern)*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = pattern;
  };
  switch (dtype) {
    case KOPE_F32:
      fill(poison == Poison::kNanA   ? uint32_t{0x7fc0dead}
           : poison == Poison::kNanB ? uint32_t{0xffa5a5a5}
                                     : uint32_t{0x7b4b3c2d});  // about 1.06e36
      break;
    case KOPE_F64:
      fill(poison == Poison::kNanA   ? uint64_t{0x7ff8deaddeaddeadull}
           : poison == Poison::kNanB ? uint64_t{0xfff4a5a5a5a5a5a5ull}
                                     : uint64_t{0x7e4b3c2d1e0f0102ull});
      break;
    case KOPE_F16:
      fill(poison == Poison::kNanA   ? uint16_t{0x7e5a}
           : poison == Poison::kNanB ? uint16_t{0xfd55}
                                     : uint16_t{0x7b21});
      break;
    case KOPE_BF16:
      fill(poison == Poison::kNanA   ? uint16_t{0x7fc5}
           : poison == Poison::kNanB ? uint16_t{0xffa3}
                                     : uint16_t{0x7b4b});
      break;
    case KOPE_I32:
      fill(poison == Poison::kNanA   ? int32_t{-559038737}
           : poison == Poison::kNanB ? int32_t{0x5a5a5a5a}
                                     : int32_t{-1234567});
      break;
    case KOPE_I64:
      fill(poison == Poison::kNanA   ? int64_t{-2401053088876216593ll}
           : poison == Poison::kNanB ? int64_t{0x5a5a5a5a5a5a5a5all}
                                     : int64_t{-123456789012345ll});
      break;
  }
}

void FillGuard(uint8_t* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(0xa7 ^ (i * 31));
}

int64_t FirstGuardDamage(const uint8_t* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != static_cast<uint8_t>(0xa7 ^ (i * 31))) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace kope
