// The runner protocol's message decoding, parent and child side: a reply or a hello (what the
// parent reads from a sandboxed child) and a call spec (what the child reads, validated against
// its arena). The first byte picks the message; for a call spec the next eight are the arena's
// size.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "runner/protocol.h"

namespace rp = kope::runner_protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t which = data[0];
  std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)rp::MessageTypeName(which);
  switch (which % 3) {
    case 0:
      (void)rp::ReadReply(payload);
      break;
    case 1:
      (void)rp::ReadHello(payload);
      break;
    default: {
      uint64_t arena_bytes = 0;
      const size_t n = payload.size() < sizeof(arena_bytes) ? payload.size() : sizeof(arena_bytes);
      std::memcpy(&arena_bytes, payload.data(), n);
      payload.remove_prefix(n);
      rp::Reader reader(payload);
      kope::Result<kope::CallSpec> spec = rp::ReadCallSpec(&reader, arena_bytes);
      if (spec.ok()) (void)rp::ValidateCall(*spec, arena_bytes);
      break;
    }
  }
  return 0;
}
