#include "cache_flush.h"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kope::runner_child {
namespace {

#if defined(__x86_64__)
struct CacheFlushCpu {
  bool clflushopt = false;
  size_t line = 64;
};

const CacheFlushCpu& FlushCpu() {
  static const CacheFlushCpu cpu = [] {
    CacheFlushCpu c;
    unsigned a, b, cx, d;
    if (__get_cpuid(1, &a, &b, &cx, &d)) {
      size_t line = ((b >> 8) & 0xff) * 8;
      if (line >= 16) c.line = line;
    }
    if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) c.clflushopt = (b & (1u << 23)) != 0;
    return c;
  }();
  return cpu;
}

__attribute__((target("clflushopt"))) void FlushOpt(const uint8_t* p, const uint8_t* end,
                                                    size_t line) {
  for (; p < end; p += line) _mm_clflushopt(const_cast<uint8_t*>(p));
}

void FlushLegacy(const uint8_t* p, const uint8_t* end, size_t line) {
  for (; p < end; p += line) _mm_clflush(p);
}
#endif

}  // namespace

bool FlushFromCaches(const void* data, size_t bytes) {
#if defined(__x86_64__)
  if (bytes == 0) return true;
  const CacheFlushCpu& cpu = FlushCpu();
  const auto begin = reinterpret_cast<uintptr_t>(data) & ~(uintptr_t{cpu.line} - 1);
  const auto* p = reinterpret_cast<const uint8_t*>(begin);
  const auto* end = static_cast<const uint8_t*>(data) + bytes;
  if (cpu.clflushopt) {
    FlushOpt(p, end, cpu.line);
  } else {
    FlushLegacy(p, end, cpu.line);
  }
  _mm_mfence();
  return true;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace kope::runner_child
