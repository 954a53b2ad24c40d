#include "kope/agent/backend_choice.h"

#include "kope/backend/cpu/cpu_backend.h"
#ifdef KOPE_HAVE_CUDA_BACKEND
#include "kope/backend/cuda/cuda_backend.h"
#endif

namespace kope::agent {
namespace {

Result<std::unique_ptr<Backend>> OpenCpu(const BackendChoice& choice) {
  CpuBackendOptions options;
  options.cache_dir = choice.cache_dir;
  return CreateCpuBackend(options);
}

Result<std::unique_ptr<Backend>> OpenCuda(const BackendChoice& choice) {
#ifdef KOPE_HAVE_CUDA_BACKEND
  if (!CudaDevicePresent()) {
    return Status::FailedPrecondition("the cuda backend needs a GPU, and none is usable here");
  }
  CudaBackendOptions options;
  options.cache_dir = choice.cache_dir;
  return CreateCudaBackend(options);
#else
  (void)choice;
  return Status::FailedPrecondition("this kope was built without the cuda backend");
#endif
}

}  // namespace

bool CudaBackendBuilt() {
#ifdef KOPE_HAVE_CUDA_BACKEND
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<Backend>> OpenBackend(const BackendChoice& choice) {
  if (choice.name == "cpu") return OpenCpu(choice);
  if (choice.name == "cuda") return OpenCuda(choice);
  if (choice.name != "auto") {
    return Status::InvalidArgument("unknown backend '" + std::string(choice.name) +
                                   "' (expected auto, cpu or cuda)");
  }
#ifdef KOPE_HAVE_CUDA_BACKEND
  const bool cuda_task = choice.task == nullptr || choice.task->baselines.count("cuda") > 0;
  if (cuda_task && CudaDevicePresent()) return OpenCuda(choice);
#endif
  return OpenCpu(choice);
}

}  // namespace kope::agent
