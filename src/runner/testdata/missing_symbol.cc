// Exports a misspelled entry point and no kope_kernel.
#include "kope/kernel.h"

extern "C" int kope_kernal(const kope_tensor*, int, kope_tensor*, int, void*) { return 0; }
