#include "kope/eval/compare.h"

#include <cmath>

namespace kope {

Comparison CompareOutputs(const void* expected, const void* actual, DType dtype, size_t count,
                          const Tolerance& tolerance) {
  Comparison c;
  for (size_t i = 0; i < count; ++i) {
    double e = LoadAsDouble(expected, dtype, i);
    double a = LoadAsDouble(actual, dtype, i);
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
