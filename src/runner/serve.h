// The kope-runner child's request loop: LOAD, MAP, CALL, TIME, QUIT over the
// control socket (protocol.h). It runs candidate code, so it trusts nothing the
// kernel leaves behind, and validates every request before acting on it.
#ifndef KOPE_SRC_RUNNER_SERVE_H_
#define KOPE_SRC_RUNNER_SERVE_H_

#include <filesystem>

namespace kope::runner_child {

// Serves requests on `sock` until QUIT or until the parent goes away. Kernels
// may only be loaded from `kernels_dir`. Returns the process exit code.
int Serve(int sock, const std::filesystem::path& kernels_dir);

// Evicts [data, data + bytes) from every cache level (clflushopt, or clflush
// on older CPUs) and fences; false where the architecture has no such
// instruction.
bool FlushFromCaches(const void* data, size_t bytes);

}  // namespace kope::runner_child

#endif  // KOPE_SRC_RUNNER_SERVE_H_
