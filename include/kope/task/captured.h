// Inputs captured where a kernel runs (`captured_inputs` of a task: the activations
// `kope deploy profile` takes from the workload), and the verification trials they make.
//
// The file is safetensors: an unsigned 64-bit little-endian header length, a JSON header
// {"NAME": {"dtype": "F32"|"BF16"|..., "shape": [...], "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}} and the data. A trial is every tensor named PREFIX + an input's name
// for each forward input of the task (a PyTorch task's parameters are drawn as usual), where
// each one has that input's dtype and its shape at the size set.
// Pure functions; thread-safe.
#ifndef KOPE_TASK_CAPTURED_H_
#define KOPE_TASK_CAPTURED_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/task/dtype.h"
#include "kope/task/task.h"

namespace kope {

struct CapturedTensor {
  std::string name;
  DType dtype = KOPE_F32;
  std::vector<int64_t> shape;
  std::string bytes;
};

// The tensors of a safetensors file, in the header's order. InvalidArgument (naming the file)
// for a malformed file: a header that is no JSON object, an unknown dtype, offsets outside the
// data or not matching the shape; IoError where it cannot be read.
Result<std::vector<CapturedTensor>> ReadSafetensors(const std::filesystem::path& file);

// One trial's captured inputs: for each of the task's inputs, the tensor to use, or nullptr
// where it is drawn (a parameter).
struct CapturedTrial {
  std::string label;  // the prefix without its final '.': "entry0.decode"
  std::vector<const CapturedTensor*> inputs;
};

// The trials `tensors` make for `task` at `set` (pointers into `tensors`), by prefix.
std::vector<CapturedTrial> CapturedTrials(const Task& task, const SizeSet& set,
                                          const std::vector<CapturedTensor>& tensors);

}  // namespace kope

#endif  // KOPE_TASK_CAPTURED_H_
