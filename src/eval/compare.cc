#include "kope/eval/compare.h"

#include <cmath>

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

}  // namespace

Comparison CompareOutputs(const void* expected, const void* actual, DType dtype, size_t count,
                          const Tolerance& tolerance) {
  switch (dtype) {
    case KOPE_F32:
      return CompareWith(TypedLoad<float>{}, expected, actual, count, tolerance);
    case KOPE_F64:
      return CompareWith(TypedLoad<double>{}, expected, actual, count, tolerance);
    case KOPE_I32:
      return CompareWith(TypedLoad<int32_t>{}, expected, actual, count, tolerance);
    default:
      return CompareWith(GenericLoad{dtype}, expected, actual, count, tolerance);
  }
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
