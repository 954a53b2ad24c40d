// Contain: allocates memory without end. Blocks of 1 GiB are allocated and never freed; one
// byte in every 64 KiB of each block is written, so the pages are really backed (touching
// every page would make the run take seconds of page faults per GiB, and the per-call
// timeout would then end it before the memory limit does). malloc's result is not checked,
// so when the address-space limit makes it fail, the next write dereferences NULL.
// Bounded at 64 GiB of address space (4 GiB touched) so that a missing limit shows up as a
// wrong verdict rather than as a shared machine running out of memory: if every block is
// granted, the kernel returns 0 with its output unwritten (incorrect).
// Task: examples/gelu. Expected verdict: crash (SIGSEGV on the NULL block under the
// address-space rlimit; SIGKILL from the OOM killer where memory runs out first).
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kope/kernel.h"

namespace {
constexpr size_t kBlock = size_t{1} << 30;
constexpr size_t kStride = size_t{64} << 10;
constexpr int kMaxBlocks = 64;
std::vector<volatile char*> g_hoard;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  g_hoard.reserve(kMaxBlocks);
  for (int i = 0; i < kMaxBlocks; ++i) {
    volatile char* block = static_cast<volatile char*>(std::malloc(kBlock));
    for (size_t offset = 0; offset < kBlock; offset += kStride) {
      block[offset] = 1;  // NULL once the limit is reached: crashes here
    }
    g_hoard.push_back(block);
  }
  return 0;
}
