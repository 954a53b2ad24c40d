// Experience export/import records (JSON lines, `kope memory import`): every line of the input
// parsed as a record, the first as the header.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "memory/exchange_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (bool first = true; !rest.empty(); first = false) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    (void)kope::memory::exchange::ParseRecord(line, first);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return 0;
}
