// Contain: allocates memory without end. Blocks of 256 MiB are allocated and touched (so they
// are really backed) and never freed; malloc's result is not checked, so when the
// address-space limit makes it fail, the next touch dereferences NULL.
// Bounded at 8 GiB so that a missing limit shows up as a wrong verdict rather than as the
// kernel exhausting a shared machine: if all 8 GiB succeed, the kernel returns 0 with its
// output unwritten (incorrect).
// Task: examples/gelu. Expected verdict: crash (SIGSEGV on the NULL block under the
// address-space rlimit, or SIGKILL from the OOM killer where memory runs out first).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kope/kernel.h"

namespace {
constexpr size_t kBlock = size_t{256} << 20;
constexpr int kMaxBlocks = 32;  // 8 GiB
std::vector<void*> g_hoard;
}  // namespace

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  for (int i = 0; i < kMaxBlocks; ++i) {
    char* block = static_cast<char*>(std::malloc(kBlock));
    std::memset(block, 0x5a, kBlock);  // NULL once the limit is reached: crashes here
    g_hoard.push_back(block);
  }
  return 0;
}
