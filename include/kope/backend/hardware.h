// HardwareInfo: the machine a measurement was taken on, and its roofline.
//
// Bandwidth and peak are measured on the machine (not taken from a data
// sheet), once, and cached with the description. The roofline floor of a
// kernel is max(bytes / bandwidth, flops / peak).
#ifndef KOPE_BACKEND_HARDWARE_H_
#define KOPE_BACKEND_HARDWARE_H_

#include <cstdint>
#include <optional>
#include <string>

namespace kope {

struct HardwareInfo {
  std::string backend;       // "cpu" or "cuda"
  std::string device;        // e.g. "Intel(R) Xeon(R) Processor" or "NVIDIA H200"
  std::string architecture;  // e.g. "x86_64-avx512" or "sm_90"
  int cores = 0;             // logical CPUs, or SMs
  uint64_t last_level_cache_bytes = 0;
  std::string compiler;              // e.g. "g++ 12.2.0"
  double bandwidth_bytes_per_s = 0;  // measured copy bandwidth (read + write bytes per second)
  double peak_flops = 0;             // measured peak f32 FMA rate, flops per second
  std::string measured_at;           // ISO date of the measurement
  std::string driver;                // GPU driver version, e.g. "580.159.04"; empty on the CPU
  uint64_t memory_bytes = 0;         // device memory (GPU); 0 on the CPU

  // A stable key for this machine class: device + architecture + cores.
  std::string Key() const;
};

// The roofline floor in seconds for the given bytes and flops (either may be absent);
// nullopt when neither is given or the hardware has no measured figures.
std::optional<double> RooflineFloorSeconds(const HardwareInfo& hw, std::optional<double> bytes,
                                           std::optional<double> flops);

}  // namespace kope

#endif  // KOPE_BACKEND_HARDWARE_H_
