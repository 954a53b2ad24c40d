#include "kope/eval/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kope/base/parallel.h"

namespace kope {
namespace {

// Elements per thread below which a loop over a tensor stays on one thread.
constexpr size_t kParallelGrain = 1u << 20;

// A fast generator seeded from the caller's (secret) one: inputs of hundreds of
// millions of elements are drawn per evaluation, and mt19937 with the polar
// normal method made drawing the evaluator's largest cost.
class FastRng {
 public:
  explicit FastRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {  // splitmix64
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Standard normal by Marsaglia's polar method, two values per accepted pair.
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * Uniform() - 1.0;
      v = 2.0 * Uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double m = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * m;
    has_spare_ = true;
    return u * m;
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

double Draw(const Distribution& d, FastRng& rng) {
  switch (d.kind) {
    case Distribution::Kind::kNormal:
      return d.mean + d.stddev * rng.Normal();
    case Distribution::Kind::kUniform:
    case Distribution::Kind::kPositive:
      return d.low + (d.high - d.low) * rng.Uniform();
    case Distribution::Kind::kWide: {
      double e = d.low_exp + (d.high_exp - d.low_exp) * rng.Uniform();
      double sign = (rng.Next() & 1) ? 1.0 : -1.0;
      return sign * std::pow(10.0, e);
    }
    case Distribution::Kind::kNegative:
      return -std::fabs(d.stddev * rng.Normal()) - 1e-3;
    case Distribution::Kind::kTies: {
      int k = std::max(1, d.num_distinct);
      auto pick = static_cast<int>(rng.Next() % static_cast<uint64_t>(k));
      // Evenly spaced values around zero, exactly representable in every float type.
      return (pick - k / 2) * 0.5;
    }
  }
  return 0.0;
}

template <typename T>
void FillTyped(T* out, size_t count, const Distribution& dist, FastRng& rng) {
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Draw(dist, rng));
}

// Fills `count` elements from one generator.
void FillBlock(void* data, DType dtype, size_t count, const Distribution& dist, FastRng& fast) {
  if (!IsFloating(dtype)) {
    // Integer ranges: [low, high), defaulting to [0, 100) when the range is empty.
    int64_t lo = static_cast<int64_t>(std::floor(dist.low));
    int64_t hi = static_cast<int64_t>(std::ceil(dist.high));
    if (hi <= lo) {
      lo = 0;
      hi = 100;
    }
    const uint64_t span = static_cast<uint64_t>(hi - lo);
    for (size_t i = 0; i < count; ++i) {
      StoreFromDouble(data, dtype, i,
                      static_cast<double>(lo + static_cast<int64_t>(fast.Next() % span)));
    }
    return;
  }
  switch (dtype) {
    case KOPE_F32:
      FillTyped(static_cast<float*>(data), count, dist, fast);
      return;
    case KOPE_F64:
      FillTyped(static_cast<double*>(data), count, dist, fast);
      return;
    default:  // f16, bf16: rounded by the dtype's own conversion
      for (size_t i = 0; i < count; ++i) StoreFromDouble(data, dtype, i, Draw(dist, fast));
  }
}

}  // namespace

void FillInput(void* data, DType dtype, size_t count, const Distribution& dist,
               std::mt19937_64& rng) {
  // Blocks of kBlock elements, each from its own generator seeded by the caller's draw and the
  // block's index, filled in parallel: the values depend on the seed only, never on threads.
  constexpr size_t kBlock = 1u << 16;
  const uint64_t seed = rng();
  auto* bytes = static_cast<uint8_t*>(data);
  const size_t esize = DTypeSize(dtype);
  ForEachBlock(count, kBlock, [&](size_t block, size_t begin, size_t end) {
    FastRng fast(seed ^ (0xd1b54a32d192ed03ull * (block + 1)));
    FillBlock(bytes + begin * esize, dtype, end - begin, dist, fast);
  });
}

std::string PoisonElement(DType dtype, Poison poison) {
  auto bytes = [](auto v) { return std::string(reinterpret_cast<const char*>(&v), sizeof(v)); };
  switch (dtype) {
    case KOPE_F32:
      return bytes(poison == Poison::kNanA   ? uint32_t{0x7fc0dead}
                   : poison == Poison::kNanB ? uint32_t{0xffa5a5a5}
                                             : uint32_t{0x7b4b3c2d});  // about 1.06e36
    case KOPE_F64:
      return bytes(poison == Poison::kNanA   ? uint64_t{0x7ff8deaddeaddeadull}
                   : poison == Poison::kNanB ? uint64_t{0xfff4a5a5a5a5a5a5ull}
                                             : uint64_t{0x7e4b3c2d1e0f0102ull});
    case KOPE_F16:
      return bytes(poison == Poison::kNanA   ? uint16_t{0x7e5a}
                   : poison == Poison::kNanB ? uint16_t{0xfd55}
                                             : uint16_t{0x7b21});
    case KOPE_BF16:
      return bytes(poison == Poison::kNanA   ? uint16_t{0x7fc5}
                   : poison == Poison::kNanB ? uint16_t{0xffa3}
                                             : uint16_t{0x7b4b});
    case KOPE_I32:
      return bytes(poison == Poison::kNanA   ? int32_t{-559038737}
                   : poison == Poison::kNanB ? int32_t{0x5a5a5a5a}
                                             : int32_t{-1234567});
    case KOPE_I64:
      return bytes(poison == Poison::kNanA   ? int64_t{-2401053088876216593ll}
                   : poison == Poison::kNanB ? int64_t{0x5a5a5a5a5a5a5a5all}
                                             : int64_t{-123456789012345ll});
    case KOPE_BOOL:  // never 0 or 1, so never a value the reference gives
      return bytes(poison == Poison::kNanA   ? uint8_t{0xde}
                   : poison == Poison::kNanB ? uint8_t{0xa5}
                                             : uint8_t{0x7b});
  }
  return {};
}

void FillPoison(void* data, DType dtype, size_t count, Poison poison) {
  const std::string element = PoisonElement(dtype, poison);
  auto fill = [&](auto zero) {
    using T = decltype(zero);
    T pattern;
    std::memcpy(&pattern, element.data(), sizeof(T));
    auto* p = static_cast<T*>(data);
    ParallelFor(count, kParallelGrain,
                [&](size_t begin, size_t end) { std::fill(p + begin, p + end, pattern); });
  };
  switch (element.size()) {
    case 1:
      fill(uint8_t{});
      break;
    case 2:
      fill(uint16_t{});
      break;
    case 4:
      fill(uint32_t{});
      break;
    case 8:
      fill(uint64_t{});
      break;
  }
}

namespace {
uint8_t GuardByte(size_t i) { return static_cast<uint8_t>(0xa7 ^ (i * 31)); }
}  // namespace

void FillGuard(uint8_t* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) data[i] = GuardByte(i);
}

std::string GuardBytes(size_t bytes) {
  std::string guard(bytes, '\0');
  FillGuard(reinterpret_cast<uint8_t*>(guard.data()), bytes);
  return guard;
}

int64_t FirstGuardDamage(const uint8_t* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != GuardByte(i)) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace kope
