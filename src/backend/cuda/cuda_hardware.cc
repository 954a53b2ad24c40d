// The GPU's description (CUDA runtime queries) and its measured roofline (a
// probe program compiled with nvcc, run once per machine class and cached).
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cuda_internal.h"
#include "kope/base/hash.h"
#include "kope/base/subprocess.h"

namespace kope {
namespace cuda_internal {
namespace {

namespace fs = std::filesystem;

// Copy (cudaMemcpy device to device, read + written bytes), read-only (a
// vectorized sum) and write-only (cudaMemset) bandwidth over 1 GiB buffers,
// best of 10 each, timed with events; f32 FMA peak from 8 independent FMA
// chains per thread on every SM. The roofline uses the best bandwidth: the
// floor must hold for any mix of reads and writes.
constexpr const char* kProbeSource = R"(
#include <cstdio>
#include <cuda_runtime.h>
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void ReadAll(const float4* __restrict__ x, size_t n, float* out) {
  float s = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float4 v = __ldcs(x + i);
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.678f) out[0] = s;
}
__global__ void Fma(float* out, int iters, float y) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-7f + j;
#pragma unroll 16
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], y, 1e-7f);
  }
  float s = 0;
  for (int j = 0; j < 8; ++j) s += a[j];
  if (s == 12345.678f) out[0] = s;
}
int main() {
  const size_t bytes = 1ull << 30;
  float *a, *b;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  auto best = [&](auto&& op, int reps) {
    float ms_best = 1e30f;
    for (int r = 0; r < reps; ++r) {
      cudaEventRecord(e0);
      op();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (ms < ms_best) ms_best = ms;
    }
    return ms_best * 1e-3;
  };
  double copy = 2.0 * bytes / best([&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); }, 10);
  double read = bytes / best([&] { ReadAll<<<sms * 8, 512>>>((const float4*)a, bytes / 16, b); }, 10);
  double write = bytes / best([&] { cudaMemsetAsync(b, 7, bytes); }, 10);
  const int iters = 1 << 14, threads = 256, blocks = sms * 16;
  double fma_s = best([&] { Fma<<<blocks, threads>>>(b, iters, 0.999999f); }, 5);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  double peak = 2.0 * 8 * iters * (double)threads * blocks / fma_s;
  std::printf("copy %.6e\nread %.6e\nwrite %.6e\npeak %.6e\n", copy, read, write, peak);
  return 0;
}
)";

std::string Today() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

std::string CudaError(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

nlohmann::json ToJson(const HardwareInfo& hw, double copy, double read, double write) {
  return {{"backend", hw.backend},
          {"device", hw.device},
          {"architecture", hw.architecture},
          {"cores", hw.cores},
          {"last_level_cache_bytes", hw.last_level_cache_bytes},
          {"memory_bytes", hw.memory_bytes},
          {"driver", hw.driver},
          {"compiler", hw.compiler},
          {"bandwidth_bytes_per_s", hw.bandwidth_bytes_per_s},
          {"copy_bandwidth_bytes_per_s", copy},
          {"read_bandwidth_bytes_per_s", read},
          {"write_bandwidth_bytes_per_s", write},
          {"peak_flops", hw.peak_flops},
          {"measured_at", hw.measured_at}};
}

}  // namespace

std::string ParseDriverVersion(std::string_view proc_text) {
  static const std::regex kVersion(
      R"(Kernel Module(?: for [A-Za-z0-9_]+)?\s+([0-9]+(?:\.[0-9]+)+))");
  std::string text(proc_text);
  std::smatch m;
  if (std::regex_search(text, m, kVersion)) return m[1].str();
  return "";
}

Result<GpuProperties> QueryGpu(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return Status::NotFound("no usable CUDA driver or GPU (" + CudaError(e) + ")");
  if (device < 0 || device >= count) {
    return Status::NotFound("no CUDA GPU " + std::to_string(device) + " (" + std::to_string(count) +
                            " found)");
  }
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) return Status::Internal("cudaGetDeviceProperties: " + CudaError(e));
  GpuProperties gpu;
  gpu.name = prop.name;
  gpu.sm_count = prop.multiProcessorCount;
  gpu.cc = {prop.major, prop.minor};
  gpu.l2_bytes = static_cast<uint64_t>(prop.l2CacheSize);
  gpu.memory_bytes = prop.totalGlobalMem;
  std::ifstream in("/proc/driver/nvidia/version");
  std::stringstream ss;
  ss << in.rdbuf();
  gpu.driver = ParseDriverVersion(ss.str());
  if (gpu.driver.empty()) {
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess) {
      gpu.driver = "CUDA " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    }
  }
  return gpu;
}

Result<HardwareInfo> DescribeGpu(const CudaBackendOptions& options, const GpuProperties& gpu,
                                 const std::string& nvcc, const std::string& nvcc_version,
                                 const std::string& arch) {
  HardwareInfo hw;
  hw.backend = "cuda";
  hw.device = gpu.name;
  hw.architecture = arch;
  hw.cores = gpu.sm_count;
  hw.last_level_cache_bytes = gpu.l2_bytes;
  hw.memory_bytes = gpu.memory_bytes;
  hw.driver = gpu.driver;
  hw.compiler = nvcc_version.substr(0, nvcc_version.find(';'));
  const std::string comma = "release ";
  if (size_t p = hw.compiler.find(comma); p != std::string::npos) {
    hw.compiler = "nvcc " + hw.compiler.substr(p + comma.size());
  }

  const fs::path cached =
      options.cache_dir / "hardware" / (ContentHash({hw.Key(), hw.driver}) + ".json");
  if (std::ifstream in(cached); in) {
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded() && j.value("device", "") == hw.device) {
      hw.bandwidth_bytes_per_s = j.value("bandwidth_bytes_per_s", 0.0);
      hw.peak_flops = j.value("peak_flops", 0.0);
      hw.measured_at = j.value("measured_at", "");
      if (hw.bandwidth_bytes_per_s > 0 && hw.peak_flops > 0) return hw;
    }
  }

  std::error_code ec;
  const fs::path work = options.cache_dir / ("cuda-probe-" + std::to_string(getpid()));
  fs::create_directories(work, ec);
  if (ec) return Status::IoError("cannot create " + work.string() + ": " + ec.message());
  {
    std::ofstream src(work / "probe.cu");
    src << kProbeSource;
  }
  ProcessOptions popts;
  popts.working_dir = work;
  popts.timeout_seconds = 180;
  Result<ProcessResult> build =
      RunProcess({nvcc, "-O3", "-std=c++17", GencodeFlag(arch), "probe.cu", "-o", "probe"}, popts);
  if (!build.ok() || !build->ok()) {
    fs::remove_all(work, ec);
    return Status::Internal("cannot build the GPU roofline probe: " +
                            (build.ok() ? build->output : build.status().ToString()));
  }
  popts.extra_env = {"CUDA_VISIBLE_DEVICES=" + std::to_string(options.device)};
  Result<ProcessResult> run = RunProcess({(work / "probe").string()}, popts);
  fs::remove_all(work, ec);
  if (!run.ok() || !run->ok()) {
    return Status::Internal("the GPU roofline probe failed: " +
                            (run.ok() ? run->output : run.status().ToString()));
  }
  std::istringstream out(run->output);
  std::string key;
  double value = 0, copy = 0, read = 0, write = 0;
  while (out >> key >> value) {
    if (key == "copy") copy = value;
    if (key == "read") read = value;
    if (key == "write") write = value;
    if (key == "peak") hw.peak_flops = value;
  }
  hw.bandwidth_bytes_per_s = std::max({copy, read, write});
  if (hw.bandwidth_bytes_per_s <= 0 || hw.peak_flops <= 0) {
    return Status::Internal("the GPU roofline probe printed no figures: " + run->output);
  }
  hw.measured_at = Today();
  fs::create_directories(cached.parent_path(), ec);
  fs::path tmp = cached;
  tmp += ".tmp" + std::to_string(getpid());
  {
    std::ofstream o(tmp);
    o << ToJson(hw, copy, read, write).dump(2) << "\n";
  }
  fs::rename(tmp, cached, ec);
  return hw;
}

}  // namespace cuda_internal

bool CudaDevicePresent() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace kope
