// Evicting a byte range from every CPU cache level, before a timed call.
// Used by kope-runner and, through a small C library (kope_flush_from_caches),
// by the Python bridge.
#ifndef KOPE_SRC_RUNNER_CHILD_CACHE_FLUSH_H_
#define KOPE_SRC_RUNNER_CHILD_CACHE_FLUSH_H_

#include <cstddef>

namespace kope::runner_child {

// Evicts [data, data + bytes) from every cache level (clflushopt, or clflush
// on older CPUs) and fences; false where the architecture has no such
// instruction.
bool FlushFromCaches(const void* data, size_t bytes);

}  // namespace kope::runner_child

#endif  // KOPE_SRC_RUNNER_CHILD_CACHE_FLUSH_H_
