// Internal to the CUDA backend: the GPU query, the hardware description and
// the tools (Nsight Compute, compute-sanitizer) around kope-cuda-launch.
#ifndef KOPE_SRC_BACKEND_CUDA_CUDA_INTERNAL_H_
#define KOPE_SRC_BACKEND_CUDA_CUDA_INTERNAL_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kope/backend/cuda/cuda_backend.h"

namespace kope::cuda_internal {

// What the CUDA runtime says about one GPU (no context is created).
struct GpuProperties {
  std::string name;
  int sm_count = 0;
  ComputeCapability cc;
  uint64_t l2_bytes = 0;
  uint64_t memory_bytes = 0;
  std::string
      driver;  // "580.159.04", or "CUDA 13.0" when the kernel module's version is unreadable
};

Result<GpuProperties> QueryGpu(int device);

// The kernel module's version from the text of /proc/driver/nvidia/version
// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..."); empty if absent.
std::string ParseDriverVersion(std::string_view proc_text);

// The GPU's description with measured bandwidth (best of copy, read and write)
// and f32 FMA peak, from a probe compiled with nvcc; cached as JSON per machine class.
Result<HardwareInfo> DescribeGpu(const CudaBackendOptions& options, const GpuProperties& gpu,
                                 const std::string& nvcc, const std::string& nvcc_version,
                                 const std::string& arch);

// The argument kope-cuda-launch takes for one shape set: "f32:1024x1024,f32:1024;f32:1024x1024"
// (inputs, ';', outputs).
std::string LaunchSetArgument(const LaunchShapes& shapes);

// Running tools on kope-cuda-launch (cuda_tools.cc).
struct ToolContext {
  CudaBackendOptions options;          // resolved: launcher, ncu, sanitizer set
  std::filesystem::path scratch_root;  // where tool runs get their scratch folder
};
Result<KernelProfile> RunProfiler(const ToolContext& context, const std::filesystem::path& artifact,
                                  const LaunchShapes& shapes);
Result<SanitizerReport> RunSanitizers(const ToolContext& context,
                                      const std::filesystem::path& artifact,
                                      const std::vector<LaunchShapes>& shapes);

}  // namespace kope::cuda_internal

#endif  // KOPE_SRC_BACKEND_CUDA_CUDA_INTERNAL_H_
