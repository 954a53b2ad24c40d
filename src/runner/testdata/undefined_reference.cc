// Links (as a shared object) but cannot be loaded: a function it calls exists nowhere.
#include "kope/kernel.h"

extern "C" int kope_function_that_does_not_exist(int);

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*) {
  return kope_function_that_does_not_exist(3);
}
