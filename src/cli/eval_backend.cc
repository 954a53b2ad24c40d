#include "eval_backend.h"

#include "kope/backend/cpu/cpu_backend.h"
#ifdef KOPE_HAVE_CUDA
#include "kope/backend/cuda/cuda_backend.h"
#endif

namespace kope::cli {

Result<std::string> EvalBackendName(std::string_view requested,
                                    const std::filesystem::path& candidate, const Task& task) {
  const bool cuda_task = task.baselines.count("cuda") > 0 || task.references.count("cuda") > 0;
  const bool cu_file = candidate.extension() == ".cu";
#ifdef KOPE_HAVE_CUDA
  if (requested == "cuda" || (requested == "auto" && cu_file && cuda_task && CudaDevicePresent())) {
    return std::string("cuda");
  }
#else
  if (requested == "cuda" || (requested == "auto" && cu_file && cuda_task)) {
    return Status::FailedPrecondition("this kope was built without the CUDA toolkit");
  }
#endif
  return std::string("cpu");
}

Result<std::unique_ptr<Backend>> MakeEvalBackend(const std::string& name) {
#ifdef KOPE_HAVE_CUDA
  if (name == "cuda") return CreateCudaBackend();
#else
  (void)name;  // EvalBackendName chose the CPU
#endif
  return CreateCpuBackend();
}

}  // namespace kope::cli
