// Loads the runner's GPU plugin (libkope-runner-cuda.so, beside kope-runner) on demand, so
// that kope-runner itself needs no CUDA library: a CPU runner starts where CUDA is absent.
// The plugin is loaded RTLD_GLOBAL: the CUDA runtime's allocation calls it defines (the
// device memory cap) then come before the runtime's own for every kernel loaded later.
#include <dlfcn.h>

#include <filesystem>

#include "cuda_device.h"

namespace kope::runner_child {

using OpenFn = CudaExecutor* (*)(const char* spec, uint64_t max_device_bytes, std::string* error);

Result<std::unique_ptr<CudaExecutor>> OpenCudaExecutor(const std::string& spec,
                                                       uint64_t max_device_bytes) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path plugin = self.parent_path() / kCudaPluginName;
  void* handle = dlopen(plugin.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return Status::FailedPrecondition("cannot load the runner's GPU plugin: " +
                                      std::string(err != nullptr ? err : plugin.string()));
  }
  auto open = reinterpret_cast<OpenFn>(dlsym(handle, "kope_runner_open_cuda"));
  if (open == nullptr) return Status::FailedPrecondition(plugin.string() + " is not a GPU plugin");
  std::string error;
  CudaExecutor* executor = open(spec.c_str(), max_device_bytes, &error);
  if (executor == nullptr) return Status::Unavailable(error);
  return std::unique_ptr<CudaExecutor>(executor);
}

}  // namespace kope::runner_child
