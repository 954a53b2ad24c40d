#include "cpu_hardware.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "kope/base/hash.h"
#include "kope/base/subprocess.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

// Measures copy bandwidth (best of several parallel copies of a buffer far
// larger than the last-level cache; read + written bytes) and peak f32 FMA
// throughput: on every core, vectors of the machine's native width (as wide as
// -march=native's registers: wider generic vectors are split and spilled) in
// more independent accumulators than the FMA units' latency times their count.
constexpr const char* kProbeSource = R"(
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#if defined(__AVX512F__)
#define LANES 16
#elif defined(__AVX__)
#define LANES 8
#else
#define LANES 4
#endif
#define ACCUMULATORS 12
typedef float vec __attribute__((vector_size(4 * LANES)));
static double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main(int argc, char** argv) {
  size_t bytes = std::strtoull(argv[1], nullptr, 10);
  size_t n = bytes / sizeof(double);
  double* a = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  double* b = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  #pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) { a[i] = 1.0 + i; b[i] = 0; }
  double best = 1e30;
  for (int rep = 0; rep < 12; ++rep) {
    double t0 = Now();
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) b[i] = a[i];
    double t = Now() - t0;
    if (t < best) best = t;
  }
  std::printf("bandwidth %.6e\n", 2.0 * n * sizeof(double) / best);
  const long steps = 1000000;
  double best_flops = 0;
  for (int rep = 0; rep < 32; ++rep) {
    double t0 = Now();
    float sink = 0;
    #pragma omp parallel reduction(+ : sink)
    {
      vec acc[ACCUMULATORS];
      vec x, y;
      for (int k = 0; k < LANES; ++k) { x[k] = 1.0f + 1e-7f * k; y[k] = 0.999999f; }
      for (int j = 0; j < ACCUMULATORS; ++j) acc[j] = x * (float)(j + 1);
      for (long i = 0; i < steps; ++i) {
        #pragma GCC unroll 12
        for (int j = 0; j < ACCUMULATORS; ++j) acc[j] = acc[j] * y + x;
      }
      for (int j = 0; j < ACCUMULATORS; ++j) for (int k = 0; k < LANES; ++k) sink += acc[j][k];
    }
    double t = Now() - t0;
    double flops = 2.0 * LANES * ACCUMULATORS * steps * omp_get_max_threads() / t;
    if (flops > best_flops) best_flops = flops;
    if (sink == 12345.0f) std::printf("#\n");
  }
  std::printf("peak %.6e\n", best_flops);
  return b[n / 2] == a[n / 2] ? 0 : 1;
}
)";

std::string ReadFirstMatch(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string value = line.substr(colon + 1);
      size_t start = value.find_first_not_of(" \t");
      return start == std::string::npos ? "" : value.substr(start);
    }
  }
  return "";
}

uint64_t LastLevelCacheBytes() {
  uint64_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    uint64_t value = std::strtoull(text.c_str(), nullptr, 10);
    char unit = text.back();
    if (unit == 'K') value <<= 10;
    if (unit == 'M') value <<= 20;
    best = std::max(best, value);
  }
  return best;
}

std::string Architecture(const std::string& flags) {
  std::string arch = "x86_64";
#if defined(__aarch64__)
  arch = "aarch64";
#endif
  if (flags.find(" avx512f") != std::string::npos) return arch + "-avx512";
  if (flags.find(" avx2") != std::string::npos) return arch + "-avx2";
  return arch;
}

std::string Today() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

nlohmann::json ToJson(const HardwareInfo& hw) {
  return {{"backend", hw.backend},
          {"device", hw.device},
          {"architecture", hw.architecture},
          {"cores", hw.cores},
          {"last_level_cache_bytes", hw.last_level_cache_bytes},
          {"compiler", hw.compiler},
          {"bandwidth_bytes_per_s", hw.bandwidth_bytes_per_s},
          {"peak_flops", hw.peak_flops},
          {"measured_at", hw.measured_at}};
}

// On a busy machine the probe runs on one core and its figures are scaled by the core count: a
// parallel loop waits at every repetition for its most delayed thread, and would report a
// fraction of the machine. The scaled figures are upper bounds (the floor they give is never
// above the true one), until a quiet machine measures again.
Status MeasureRoofline(const CpuBackendOptions& options, bool busy, HardwareInfo* hw) {
  std::error_code ec;
  fs::path work = options.cache_dir / ("probe-" + std::to_string(getpid()));
  fs::create_directories(work, ec);
  if (ec) return Status::IoError("cannot create " + work.string() + ": " + ec.message());
  {
    std::ofstream src(work / "probe.cc");
    src << kProbeSource;
  }
  ProcessOptions popts;
  popts.working_dir = work;
  popts.timeout_seconds = 120;
  Result<ProcessResult> build = RunProcess(
      {options.compiler, "-O3", "-march=native", "-fopenmp", "probe.cc", "-o", "probe"}, popts);
  if (!build.ok() || !build->ok()) {
    fs::remove_all(work, ec);
    return Status::Internal("cannot build the roofline probe: " +
                            (build.ok() ? build->output : build.status().ToString()));
  }
  uint64_t bytes = std::clamp<uint64_t>(4 * hw->last_level_cache_bytes, 256ull << 20, 1ull << 30);
  if (busy) popts.extra_env = {"OMP_NUM_THREADS=1"};
  Result<ProcessResult> run = RunProcess({(work / "probe").string(), std::to_string(bytes)}, popts);
  fs::remove_all(work, ec);
  if (!run.ok() || !run->ok()) {
    return Status::Internal("the roofline probe failed: " +
                            (run.ok() ? run->output : run.status().ToString()));
  }
  std::istringstream out(run->output);
  std::string key;
  double value = 0;
  while (out >> key >> value) {
    if (key == "bandwidth") hw->bandwidth_bytes_per_s = value;
    if (key == "peak") hw->peak_flops = value;
  }
  if (hw->bandwidth_bytes_per_s <= 0 || hw->peak_flops <= 0) {
    return Status::Internal("the roofline probe printed no figures: " + run->output);
  }
  if (busy) {
    hw->bandwidth_bytes_per_s *= std::max(hw->cores, 1);
    hw->peak_flops *= std::max(hw->cores, 1);
  }
  hw->measured_at = Today();
  return Status::Ok();
}

// Whether other work keeps the machine busy: a load average of half its cores or more.
bool Busy(int cores) {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  return (in >> load) && load >= 0.5 * std::max(cores, 1);
}

struct CachedFigures {
  double bandwidth = 0;
  double peak = 0;
  std::string measured_at;
  bool busy = false;  // measured while other work ran
};

std::optional<CachedFigures> ReadCached(const fs::path& path, const std::string& device) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || j.value("device", "") != device || !j.contains("peak_flops")) {
    return std::nullopt;
  }
  CachedFigures c{j.value("bandwidth_bytes_per_s", 0.0), j.value("peak_flops", 0.0),
                  j.value("measured_at", ""), j.value("measured_busy", false)};
  if (c.bandwidth <= 0 || c.peak <= 0) return std::nullopt;
  return c;
}

void WriteCached(const fs::path& path, const HardwareInfo& hw, bool busy) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(getpid());
  {
    nlohmann::json j = ToJson(hw);
    j["measured_busy"] = busy;
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
  }
  fs::rename(tmp, path, ec);
}

}  // namespace

std::string CpuFeatureFlags() { return ReadFirstMatch("/proc/cpuinfo", "flags"); }

Result<HardwareInfo> DescribeCpu(const CpuBackendOptions& options,
                                 const std::string& compiler_version) {
  HardwareInfo hw;
  hw.backend = "cpu";
  hw.device = ReadFirstMatch("/proc/cpuinfo", "model name");
  if (hw.device.empty()) hw.device = "unknown CPU";
  hw.architecture = Architecture(" " + CpuFeatureFlags() + " ");
  hw.cores = static_cast<int>(std::thread::hardware_concurrency());
  hw.last_level_cache_bytes = LastLevelCacheBytes();
  hw.compiler = compiler_version;

  // The probe's own source is part of the key: a changed probe measures again.
  const fs::path cached =
      options.cache_dir / "hardware" / (ContentHash({hw.Key(), kProbeSource}) + ".json");
  const bool busy = Busy(hw.cores);
  std::optional<CachedFigures> before = ReadCached(cached, hw.device);
  // Other work only lowers the probe's figures: a quiet machine measures again figures that
  // were taken on a busy one, and keeps the better of each.
  if (before && (!before->busy || busy)) {
    hw.bandwidth_bytes_per_s = before->bandwidth;
    hw.peak_flops = before->peak;
    hw.measured_at = before->measured_at;
    return hw;
  }
  KOPE_RETURN_IF_ERROR(MeasureRoofline(options, busy, &hw));
  if (before) {
    hw.bandwidth_bytes_per_s = std::max(hw.bandwidth_bytes_per_s, before->bandwidth);
    hw.peak_flops = std::max(hw.peak_flops, before->peak);
  }
  WriteCached(cached, hw, busy);
  return hw;
}

}  // namespace kope
