// Reading the `distribution` field of an input. Private to the task component.
#ifndef KOPE_SRC_TASK_DISTRIBUTION_H_
#define KOPE_SRC_TASK_DISTRIBUTION_H_

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/task/dtype.h"
#include "kope/task/task.h"

namespace kope::task_internal {

// What an input of `dtype` gets without a `distribution` field: the cycle
// normal, wide, negative, ties for floating dtypes; uniform [0, 100) for integers.
std::vector<Distribution> DefaultDistributions(DType dtype);

// Reads a kind name, a table, or a non-empty array of either, for an input of
// `dtype` at field `path`, checking every field and its range.
Result<std::vector<Distribution>> ReadDistributions(const toml::node& node, DType dtype,
                                                    const std::string& path);

}  // namespace kope::task_internal

#endif  // KOPE_SRC_TASK_DISTRIBUTION_H_
