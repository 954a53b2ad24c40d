// Allocates and touches 64 MiB blocks until allocation fails (returns 3). Stops
// at 8 GiB and returns 0, so that a broken memory limit fails the test instead
// of exhausting the machine.
#include <cstdlib>
#include <cstring>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*) {
  const size_t block = 64u << 20;
  for (size_t total = 0; total < (8ull << 30); total += block) {
    void* p = std::malloc(block);
    if (p == nullptr) return 3;
    std::memset(p, 1, block);
  }
  return 0;
}
