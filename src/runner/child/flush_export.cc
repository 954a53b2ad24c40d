// The C entry point of libkope-flush.so: the Python bridge evicts a call's tensors from
// the CPU caches before timing it, exactly as kope-runner does.
#include <cstddef>

#include "cache_flush.h"

extern "C" __attribute__((visibility("default"))) int kope_flush_from_caches(const void* data,
                                                                             size_t bytes) {
  return kope::runner_child::FlushFromCaches(data, bytes) ? 0 : -1;
}
