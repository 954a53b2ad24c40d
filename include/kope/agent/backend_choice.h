// Which backend an episode runs on: the one place that decides.
//
// "cpu" and "cuda" name a backend; "auto" (the default) takes CUDA when kope was built with the
// CUDA backend, a GPU is usable and the task has a cuda baseline, and the CPU otherwise. A named
// backend that this build lacks, or CUDA without a GPU, is FailedPrecondition; an unknown name is
// InvalidArgument. The backend is created with its defaults (the compile cache in
// DefaultCacheDir()) unless `cache_dir` is set. Thread-safe.
#ifndef KOPE_AGENT_BACKEND_CHOICE_H_
#define KOPE_AGENT_BACKEND_CHOICE_H_

#include <filesystem>
#include <memory>
#include <string_view>

#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/task/task.h"

namespace kope::agent {

struct BackendChoice {
  std::string_view name = "auto";  // "auto", "cpu", "cuda"
  const Task* task = nullptr;      // for "auto": whether the task has a cuda baseline
  std::filesystem::path cache_dir;
};

Result<std::unique_ptr<Backend>> OpenBackend(const BackendChoice& choice);

// Whether this build has the CUDA backend.
bool CudaBackendBuilt();

}  // namespace kope::agent

#endif  // KOPE_AGENT_BACKEND_CHOICE_H_
