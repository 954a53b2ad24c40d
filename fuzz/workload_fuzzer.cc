// Workload files (`kope deploy`): parsing and validation, then the normalized workload.json.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kope/deploy/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kope::Result<kope::deploy::Workload> workload = kope::deploy::ParseWorkload(text, "fuzz.toml");
  if (workload.ok()) (void)kope::deploy::WorkloadToJson(*workload);
  return 0;
}
