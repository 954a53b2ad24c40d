#include "kope/backend/hardware.h"

#include <algorithm>

namespace kope {

std::string HardwareInfo::Key() const {
  std::string key = backend + "|" + device + "|" + architecture + "|" + std::to_string(cores);
  for (char& c : key) {
    if (c == ' ') c = '_';
  }
  return key;
}

std::optional<double> RooflineFloorSeconds(const HardwareInfo& hw, std::optional<double> bytes,
                                           std::optional<double> flops) {
  std::optional<double> floor;
  if (bytes && *bytes > 0 && hw.bandwidth_bytes_per_s > 0) {
    floor = *bytes / hw.bandwidth_bytes_per_s;
  }
  if (flops && *flops > 0 && hw.peak_flops > 0) {
    double compute = *flops / hw.peak_flops;
    floor = floor ? std::max(*floor, compute) : compute;
  }
  return floor;
}

}  // namespace kope
