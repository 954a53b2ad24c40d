// Comparing a candidate's output with the reference's.
//
// Element i passes when both are NaN, or both are the same infinity, or both
// are finite and |actual - expected| <= atol + rtol * |expected|. A NaN or
// infinity on one side only fails: NaN/Inf positions must match exactly.
// Integer outputs compare exactly unless the tolerance says otherwise.
// Pure functions; thread-safe.
#ifndef KOPE_EVAL_COMPARE_H_
#define KOPE_EVAL_COMPARE_H_

#include <cstdint>
#include <vector>

#include "kope/task/task.h"

namespace kope {

struct Comparison {
  bool ok = true;
  int64_t mismatches = 0;    // elements that fail
  int64_t first_index = -1;  // flat index of the first failing element
  double expected = 0;       // at first_index
  double actual = 0;
  double max_abs_error = 0;       // over finite pairs
  double max_rel_error = 0;       // |a - e| / |e| over finite pairs with e != 0
  bool nan_inf_mismatch = false;  // the first failure is a NaN/Inf position mismatch
};

Comparison CompareOutputs(const void* expected, const void* actual, DType dtype, size_t count,
                          const Tolerance& tolerance);

// Row-major multi-index of a flat index within `shape`.
std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace kope

#endif  // KOPE_EVAL_COMPARE_H_
