#include "kope/eval/compare.h"

#include <algorithm>
#include <cmath>

#include "kope/base/parallel.h"

namespace kope {

namespace {

// Loads element i as double; the dtype switch is hoisted out of the loop by
// instantiating the comparison once per element type.
template <typename T>
struct TypedLoad {
  double operator()(const void* p, size_t i) const { return static_cast<const T*>(p)[i]; }
};
struct GenericLoad {
  DType dtype;
  double operator()(const void* p, size_t i) const { return LoadAsDouble(p, dtype, i); }
};

template <typename Load>
Comparison CompareWith(Load load, const void* expected, const void* actual, size_t count,
                       const Tolerance& tolerance) {
  Comparison c;
  for (size_t i = 0; i < count; ++i) {
    double e = load(expected, i);
    double a = load(actual, i);
    bool pass;
    bool nan_inf = false;
    if (std::isnan(e) || std::isnan(a)) {
      pass = std::isnan(e) && std::isnan(a);
      nan_inf = !pass;
    } else if (std::isinf(e) || std::isinf(a)) {
      pass = e == a;
      nan_inf = !pass;
    } else {
      double err = std::fabs(a - e);
      c.max_abs_error = std::max(c.max_abs_error, err);
      if (e != 0) c.max_rel_error = std::max(c.max_rel_error, err / std::fabs(e));
      pass = err <= tolerance.atol + tolerance.rtol * std::fabs(e);
    }
    if (!pass) {
      if (c.mismatches == 0) {
        c.first_index = static_cast<int64_t>(i);
        c.expected = e;
        c.actual = a;
        c.nan_inf_mismatch = nan_inf;
      }
      ++c.mismatches;
      c.ok = false;
    }
  }
  return c;
}

// The comparison of elements [begin, end); indices stay those of the whole tensor.
Comparison CompareRange(const void* expected, const void* actual, DType dtype, size_t begin,
                        size_t end, const Tolerance& tolerance) {
  const size_t esize = DTypeSize(dtype);
  expected = static_cast<const uint8_t*>(expected) + begin * esize;
  actual = static_cast<const uint8_t*>(actual) + begin * esize;
  const size_t count = end - begin;
  Comparison c;
  switch (dtype) {
    case KOPE_F32:
      c = CompareWith(TypedLoad<float>{}, expected, actual, count, tolerance);
      break;
    case KOPE_F64:
      c = CompareWith(TypedLoad<double>{}, expected, actual, count, tolerance);
      break;
    case KOPE_I32:
      c = CompareWith(TypedLoad<int32_t>{}, expected, actual, count, tolerance);
      break;
    default:
      c = CompareWith(GenericLoad{dtype}, expected, actual, count, tolerance);
  }
  if (c.first_index >= 0) c.first_index += static_cast<int64_t>(begin);
  return c;
}

}  // namespace

Comparison CompareOutputs(const void* expected, const void* actual, DType dtype, size_t count,
                          const Tolerance& tolerance) {
  // Blocks compared in parallel, merged in order: the first failing element is the first of
  // the first block with a failure.
  constexpr size_t kBlock = 1u << 20;
  if (count <= kBlock) return CompareRange(expected, actual, dtype, 0, count, tolerance);
  std::vector<Comparison> blocks((count + kBlock - 1) / kBlock);
  ForEachBlock(count, kBlock, [&](size_t b, size_t begin, size_t end) {
    blocks[b] = CompareRange(expected, actual, dtype, begin, end, tolerance);
  });
  Comparison c;
  for (const Comparison& b : blocks) {
    c.max_abs_error = std::max(c.max_abs_error, b.max_abs_error);
    c.max_rel_error = std::max(c.max_rel_error, b.max_rel_error);
    if (b.mismatches == 0) continue;
    if (c.mismatches == 0) {
      c.first_index = b.first_index;
      c.expected = b.expected;
      c.actual = b.actual;
      c.nan_inf_mismatch = b.nan_inf_mismatch;
    }
    c.mismatches += b.mismatches;
    c.ok = false;
  }
  return c;
}

std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] <= 0) continue;
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

}  // namespace kope
