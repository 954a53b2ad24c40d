// Reading the table parsed from task.toml into a Task. Private to the task
// component.
#ifndef KOPE_SRC_TASK_TASK_TABLE_H_
#define KOPE_SRC_TASK_TASK_TABLE_H_

#include <toml++/toml.h>

#include "kope/base/status.h"
#include "kope/task/task.h"

namespace kope::task_internal {

// Checks the structure of `table` field by field: no unknown keys, required
// fields present with the right types, names, dtypes, distributions, size
// values, expression syntax and source languages. Cross-field rules (sizes
// defined everywhere, shapes >= 1, check coverage, source files) are
// LoadTask's. Kernel source paths come back as written in the file; `dir` is
// left empty. Errors are "<field path>: <what is wrong>".
Result<Task> ReadTaskTable(const toml::table& table);

}  // namespace kope::task_internal

#endif  // KOPE_SRC_TASK_TASK_TABLE_H_
