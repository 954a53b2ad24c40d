// The device memory cap of a CUDA runner: kope-runner defines the CUDA
// runtime's allocation entry points itself and exports them (cuda_exports.list),
// so a kernel's shared object, and the libraries it loads, bind to these; each
// counts the bytes and forwards to the runtime's own function (dlsym RTLD_NEXT).
// An allocation that would take the kernel past the cap fails with
// cudaErrorMemoryAllocation, as if the GPU were full. What this does not see:
// driver-API allocations and entry points fetched by cudaGetDriverEntryPoint.
#include "cuda_alloc_cap.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace kope::runner_child {
namespace {

std::atomic<uint64_t> g_cap{0};
std::atomic<uint64_t> g_used{0};
std::mutex g_mu;
std::unordered_map<void*, size_t>* g_sizes = nullptr;  // leaked: used until exit

template <typename Fn>
Fn Real(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

bool Take(size_t bytes) {
  const uint64_t cap = g_cap.load();
  uint64_t used = g_used.load();
  do {
    if (cap != 0 && used + bytes > cap) return false;
  } while (!g_used.compare_exchange_weak(used, used + bytes));
  return true;
}

void Give(size_t bytes) { g_used.fetch_sub(bytes); }

void Remember(void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sizes == nullptr) g_sizes = new std::unordered_map<void*, size_t>();
  (*g_sizes)[p] = bytes;
}

void Forget(void* p) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sizes == nullptr) return;
  auto it = g_sizes->find(p);
  if (it == g_sizes->end()) return;
  Give(it->second);
  g_sizes->erase(it);
}

template <typename Alloc>
cudaError_t Counted(void** p, size_t bytes, Alloc&& alloc) {
  if (p == nullptr) return alloc();
  if (!Take(bytes)) return cudaErrorMemoryAllocation;
  const cudaError_t e = alloc();
  if (e != cudaSuccess) {
    Give(bytes);
  } else {
    Remember(*p, bytes);
  }
  return e;
}

using MallocFn = cudaError_t (*)(void**, size_t);
using MallocAsyncFn = cudaError_t (*)(void**, size_t, cudaStream_t);
using MallocManagedFn = cudaError_t (*)(void**, size_t, unsigned int);
using MallocPitchFn = cudaError_t (*)(void**, size_t*, size_t, size_t);
using MallocFromPoolFn = cudaError_t (*)(void**, size_t, cudaMemPool_t, cudaStream_t);
using FreeFn = cudaError_t (*)(void*);
using FreeAsyncFn = cudaError_t (*)(void*, cudaStream_t);

}  // namespace

void SetDeviceAllocationCap(uint64_t bytes) { g_cap.store(bytes); }
uint64_t DeviceBytesAllocatedByKernel() { return g_used.load(); }

cudaError_t HarnessMalloc(void** p, size_t bytes) {
  static const MallocFn real = Real<MallocFn>("cudaMalloc");
  return real != nullptr ? real(p, bytes) : cudaErrorNotSupported;
}

cudaError_t HarnessFree(void* p) {
  static const FreeFn real = Real<FreeFn>("cudaFree");
  return real != nullptr ? real(p) : cudaErrorNotSupported;
}

}  // namespace kope::runner_child

using namespace kope::runner_child;  // NOLINT: the definitions below are the runtime's names

extern "C" {

cudaError_t cudaMalloc(void** p, size_t bytes) {
  static const MallocFn real = Real<MallocFn>("cudaMalloc");
  if (real == nullptr) return cudaErrorNotSupported;
  return Counted(p, bytes, [&] { return real(p, bytes); });
}

cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  static const MallocAsyncFn real = Real<MallocAsyncFn>("cudaMallocAsync");
  if (real == nullptr) return cudaErrorNotSupported;
  return Counted(p, bytes, [&] { return real(p, bytes, stream); });
}

cudaError_t cudaMallocFromPoolAsync(void** p, size_t bytes, cudaMemPool_t pool,
                                    cudaStream_t stream) {
  static const MallocFromPoolFn real = Real<MallocFromPoolFn>("cudaMallocFromPoolAsync");
  if (real == nullptr) return cudaErrorNotSupported;
  return Counted(p, bytes, [&] { return real(p, bytes, pool, stream); });
}

cudaError_t cudaMallocManaged(void** p, size_t bytes, unsigned int flags) {
  static const MallocManagedFn real = Real<MallocManagedFn>("cudaMallocManaged");
  if (real == nullptr) return cudaErrorNotSupported;
  return Counted(p, bytes, [&] { return real(p, bytes, flags); });
}

cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  static const MallocPitchFn real = Real<MallocPitchFn>("cudaMallocPitch");
  if (real == nullptr) return cudaErrorNotSupported;
  // The pitch is at least the width; count the width padded to 512 bytes, what the
  // runtime returns on current GPUs, before the call (the cap is checked up front).
  const size_t bytes = ((width + 511) / 512) * 512 * height;
  return Counted(p, bytes, [&] { return real(p, pitch, width, height); });
}

cudaError_t cudaFree(void* p) {
  static const FreeFn real = Real<FreeFn>("cudaFree");
  if (real == nullptr) return cudaErrorNotSupported;
  const cudaError_t e = real(p);
  if (e == cudaSuccess && p != nullptr) Forget(p);
  return e;
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  static const FreeAsyncFn real = Real<FreeAsyncFn>("cudaFreeAsync");
  if (real == nullptr) return cudaErrorNotSupported;
  const cudaError_t e = real(p, stream);
  if (e == cudaSuccess && p != nullptr) Forget(p);
  return e;
}

}  // extern "C"
