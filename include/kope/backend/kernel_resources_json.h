// KernelResources as JSON: the one form of the compiler's resource report, used by the CUDA
// backend's compile cache (the report kept beside each artifact) and by the evaluator's record
// (OutcomeToJson's "resources").
//
// Each function is an object {"function", "arch", "registers", "shared_bytes",
// "constant_bytes", "stack_bytes", "spill_store_bytes", "spill_load_bytes"}, keys in
// alphabetical order. Pure; thread-safe.
#ifndef KOPE_BACKEND_KERNEL_RESOURCES_JSON_H_
#define KOPE_BACKEND_KERNEL_RESOURCES_JSON_H_

#include <string>
#include <string_view>
#include <vector>

#include "kope/backend/backend.h"

namespace kope {

// A JSON array, one object per function, on one line.
std::string KernelResourcesToJson(const std::vector<KernelResources>& resources);

// The functions of such an array. Entries that are not objects are skipped and absent fields
// read as empty or 0; a text that is not an array, or a field of the wrong type, gives an empty
// list (the report is then treated as missing).
std::vector<KernelResources> KernelResourcesFromJson(std::string_view json);

}  // namespace kope

#endif  // KOPE_BACKEND_KERNEL_RESOURCES_JSON_H_
