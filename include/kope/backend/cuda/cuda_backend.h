// The CUDA backend: kernels compiled by nvcc into shared objects for the GPU
// found at run time, cached by content, with the compiler's resource report.
//
// A candidate is one CUDA C++ file exporting `extern "C" int kope_kernel(...)`
// (include/kope/kernel.h) that launches its work on the `stream` it is given.
// It is compiled with
//   nvcc -std=c++17 -O3 -gencode=arch=compute_XX,code=sm_XX -Xcompiler -fPIC -shared
//        -cudart shared -Xptxas -v -I<include> kernel.cu kope_entry_check.cc
//        -Xlinker --no-undefined
// where sm_XX is the GPU's compute capability (sm_90a on H100/H200: the `a`
// features such as wgmma are usable). The cache key covers the source, the
// flags, nvcc's version, the ABI header and the target; artifacts are written
// under a temporary name and renamed, and the ptxas resource report is stored
// beside each artifact, so a cache hit returns it too. Compiles run inside
// bubblewrap where it works. Thread-safe: compiles may run in parallel, with
// each other and with evaluations.
//
// Hardware(): device name, SM count, compute capability, driver, L2 and memory
// size are read through the CUDA runtime; copy, read and write bandwidth and the
// f32 FMA peak are measured once per machine class by a probe program compiled
// with nvcc, then cached as JSON (the roofline bandwidth is the best of the three).
//
// Profile() runs Nsight Compute (ncu) and Sanitize() compute-sanitizer on the
// `kope-cuda-launch` program, which loads the kernel and calls it on random
// inputs of the given shapes; both run inside bubblewrap where it works. A tool
// that is missing or cannot read the counters is reported in `note`, not as an
// error.
#ifndef KOPE_BACKEND_CUDA_CUDA_BACKEND_H_
#define KOPE_BACKEND_CUDA_CUDA_BACKEND_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/backend/backend.h"

namespace kope {

struct CudaBackendOptions {
  std::filesystem::path cache_dir;    // empty: DefaultCacheDir()
  std::string nvcc;                   // empty: $KOPE_NVCC, else the toolkit kope was built with
  std::filesystem::path include_dir;  // the folder holding kope/kernel.h; empty: the source tree's
  // Target, e.g. "sm_90a"; empty: $KOPE_CUDA_ARCH, else from the GPU's compute capability.
  // Without a GPU and without this, CreateCudaBackend fails.
  std::string arch;
  int device = 0;  // the GPU's ordinal (CUDA runtime numbering)
  double compile_timeout_seconds = 120;
  std::vector<std::string> extra_flags;
  std::filesystem::path launcher;  // kope-cuda-launch; empty: beside the running program
  std::string ncu = "ncu";         // $KOPE_NCU overrides
  std::string sanitizer = "compute-sanitizer";  // $KOPE_COMPUTE_SANITIZER overrides
  double tool_timeout_seconds = 300;
};

Result<std::unique_ptr<Backend>> CreateCudaBackend(CudaBackendOptions options = {});

// Whether a CUDA GPU is usable from this process (driver present, at least one device).
bool CudaDevicePresent();

// --- Host-side pieces, exposed for tests ------------------------------------------------

struct ComputeCapability {
  int major = 0;
  int minor = 0;
};

// Parses "9.0" (nvidia-smi --query-gpu=compute_cap) or "90" / "sm_90" / "sm_90a".
std::optional<ComputeCapability> ParseComputeCapability(std::string_view text);

// The nvcc target for a compute capability: "sm_90a" for 9.0 (so that Hopper's
// arch-specific instructions can be used), "sm_100a" for 10.0, else "sm_<major><minor>".
std::string ArchForCapability(ComputeCapability cc);

// The -gencode flag for a target: "sm_90a" -> "-gencode=arch=compute_90a,code=sm_90a".
std::string GencodeFlag(std::string_view arch);

// The full nvcc command line for `source_file` (and the entry-point check file)
// into `output`, in the order the backend runs it.
std::vector<std::string> NvccCommand(const std::string& nvcc, std::string_view arch,
                                     const std::filesystem::path& include_dir,
                                     const std::vector<std::string>& extra_flags,
                                     const std::string& source_file, const std::string& output);

// nvcc's own front-end messages ("k.cu(12): error: ..."), host compiler
// messages ("k.cu:12:5: error: ..."), ptxas and linker errors, as diagnostics,
// errors first, at most `max_diagnostics`.
std::vector<Diagnostic> ParseNvccOutput(std::string_view output, size_t max_diagnostics = 8);

// The resource lines of `ptxas -v` ("ptxas info : Used 32 registers, 8 bytes
// smem, 380 bytes cmem[0]", with the "Compiling entry function" and "bytes
// stack frame, ... spill stores" lines), one entry per function.
std::vector<KernelResources> ParsePtxasReport(std::string_view output);

// One row of Nsight Compute's --csv --page raw output: parsed metric values for
// the kernel launch with the largest gpu__time_duration.sum. Exposed for tests.
Result<KernelProfile> ParseNcuCsv(std::string_view csv);

// The first error block of compute-sanitizer's output ("========= Invalid __global__
// write of size 4 bytes ..."), trimmed; empty when it reports none.
std::string FirstSanitizerError(std::string_view output);

}  // namespace kope

#endif  // KOPE_BACKEND_CUDA_CUDA_BACKEND_H_
