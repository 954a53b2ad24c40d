// Describing the CPU and measuring its roofline (internal to the CPU backend).
#ifndef KOPE_SRC_BACKEND_CPU_CPU_HARDWARE_H_
#define KOPE_SRC_BACKEND_CPU_CPU_HARDWARE_H_

#include <string>

#include "kope/backend/cpu/cpu_backend.h"

namespace kope {

// The "flags" line of /proc/cpuinfo (what -march=native depends on).
std::string CpuFeatureFlags();

// The CPU's description with measured copy bandwidth and peak f32 FMA rate.
// The figures come from a probe program compiled with the backend's compiler
// and run once per machine class; they are cached as JSON in the cache folder (figures taken
// while other work kept the machine busy are measured again once it is quiet).
Result<HardwareInfo> DescribeCpu(const CpuBackendOptions& options,
                                 const std::string& compiler_version);

}  // namespace kope

#endif  // KOPE_SRC_BACKEND_CPU_CPU_HARDWARE_H_
