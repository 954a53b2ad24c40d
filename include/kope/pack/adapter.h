// Transfer of a pack kernel to a task: which task tensor plays which role, the attribute values
// the task needs, and the candidate source that serves the task through the kernel.
//
// BindRoles tries every assignment of the task's inputs to the kernel's input roles (and of its
// outputs to the output roles) and keeps one under which every tensor has a dtype its role
// accepts and every shape fits its role's pattern at every size set of the task, with one value
// per name across all roles of a set ("...": the same leading dimensions wherever it appears).
// Among the assignments that fit, the one whose tensor names agree most with the role names wins;
// then the task's own order. Attribute values come from, in this order: a pattern name of the
// same name that is one constant over the size sets; an assignment `NAME = number` (or
// `NAME: float = number`) in one of the task's baseline or reference sources (a KernelBench
// problem's default argument); the value the pack's own tasks use.
//
// AdapterSource is the kernel's source with its `kope:attr` constants set to those values and its
// entry point renamed, followed by a `kope_kernel` that hands the task's tensors over in the
// kernel's order: one source file, compiled and judged by the evaluator like any candidate. When
// the assignment is the identity and no attribute changes, it is the kernel's source unchanged.
// Pure functions apart from reading the task's sources; thread-safe.
#ifndef KOPE_PACK_ADAPTER_H_
#define KOPE_PACK_ADAPTER_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/pack/manifest.h"
#include "kope/task/task.h"

namespace kope::pack {

struct RoleBinding {
  std::vector<int> inputs;   // inputs[k]: the task input given as the kernel's input k
  std::vector<int> outputs;  // outputs[k]: the task output given as the kernel's output k
  std::map<std::string, double> attributes;  // the values for this task
  bool identity = true;                      // both in the task's own order
};

// The binding, or nullopt when no assignment fits.
Result<std::optional<RoleBinding>> BindRoles(const KernelSpec& spec, const Task& task);

// The attributes a source marks (`... = <number>;  // kope:attr NAME`), with their values.
std::map<std::string, double> MarkedAttributes(std::string_view source);

// `source` with the marked attributes set to `values` (names it does not mark are ignored).
std::string SetAttributes(std::string_view source, const std::map<std::string, double>& values);

std::string AdapterSource(const KernelSpec& spec, std::string_view kernel_source,
                          const RoleBinding& binding, std::string_view task_name);

// BindRoles, then AdapterSource; nullopt when the kernel does not fit the task.
Result<std::optional<std::string>> AdaptKernel(const KernelSpec& spec,
                                               std::string_view kernel_source, const Task& task);

}  // namespace kope::pack

#endif  // KOPE_PACK_ADAPTER_H_
