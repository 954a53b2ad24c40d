// kope-cuda-launch: loads one compiled CUDA kernel and calls it on random
// inputs, for the tools that must start the process themselves (Nsight
// Compute, compute-sanitizer). Never part of an evaluation's verdict path.
//
//   kope-cuda-launch --kernel K.so [--device N] [--warmup W] [--profile]
//                    --set "f32:1024x1024,f32:1024;f32:1024x1024" [--set ...]
//
// A set lists the inputs' dtypes and shapes, ';', then the outputs'. Each set
// gets fresh device buffers (inputs uniform in [-1, 1), integers in [0, 100)),
// W warm-up calls and one more call; with --profile that call alone is inside
// cudaProfilerStart/Stop. Exit 0 when every call returned 0 and left no CUDA
// error; 1 otherwise, with the reason on stderr; 2 for bad usage.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/kernel.h"
#include "kope/task/dtype.h"

namespace {

struct Tensor {
  kope_dtype dtype = KOPE_F32;
  std::vector<int64_t> shape;
};

// "f32:1024x1024" (a scalar is "f32:").
bool ParseTensor(std::string_view s, Tensor* t) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  const std::optional<kope::DType> dtype = kope::ParseDType(s.substr(0, colon));  // task.toml's
  if (!dtype) return false;
  t->dtype = *dtype;
  std::string_view dims = s.substr(colon + 1);
  while (!dims.empty()) {
    const size_t x = dims.find('x');
    const std::string d(dims.substr(0, x));
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < 1) return false;
    t->shape.push_back(v);
    if (x == std::string_view::npos) break;
    dims = dims.substr(x + 1);
  }
  return t->shape.size() <= KOPE_MAX_DIMS;
}

bool ParseList(std::string_view s, std::vector<Tensor>* out) {
  while (!s.empty()) {
    const size_t comma = s.find(',');
    Tensor t;
    if (!ParseTensor(s.substr(0, comma), &t)) return false;
    out->push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  return !out->empty();
}

struct Set {
  std::vector<Tensor> inputs, outputs;
};

uint64_t Next(uint64_t* state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

uint16_t HalfBits(float f) {
  // f in [-1, 1): no overflow, subnormals flushed.
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((b >> 13) & 0x3ffu));
}

void Fill(std::vector<uint8_t>* host, kope_dtype dtype, size_t count, uint64_t* rng) {
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = Next(rng);
    const float f = static_cast<float>(static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    uint8_t* p = host->data() + i * kope::DTypeSize(dtype);
    switch (dtype) {
      case KOPE_F32:
        std::memcpy(p, &f, 4);
        break;
      case KOPE_F64: {
        const double d = f;
        std::memcpy(p, &d, 8);
        break;
      }
      case KOPE_F16: {
        const uint16_t h = HalfBits(f);
        std::memcpy(p, &h, 2);
        break;
      }
      case KOPE_BF16: {
        uint32_t b;
        std::memcpy(&b, &f, 4);
        const uint16_t h = static_cast<uint16_t>(b >> 16);
        std::memcpy(p, &h, 2);
        break;
      }
      case KOPE_I32: {
        const int32_t v = static_cast<int32_t>(r % 100);
        std::memcpy(p, &v, 4);
        break;
      }
      case KOPE_I64: {
        const int64_t v = static_cast<int64_t>(r % 100);
        std::memcpy(p, &v, 8);
        break;
      }
      case KOPE_BOOL: {
        const uint8_t v = static_cast<uint8_t>(r & 1);
        std::memcpy(p, &v, 1);
        break;
      }
    }
  }
}

int Fail(const std::string& what, cudaError_t e) {
  std::fprintf(stderr, "kope-cuda-launch: %s: %s (%s)\n", what.c_str(), cudaGetErrorString(e),
               cudaGetErrorName(e));
  return 1;
}

kope_tensor Describe(const Tensor& t, void* data) {
  kope_tensor k;
  std::memset(&k, 0, sizeof(k));
  k.data = data;
  k.dtype = t.dtype;
  k.ndim = static_cast<int32_t>(t.shape.size());
  int64_t stride = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    k.shape[d] = t.shape[d];
    k.strides[d] = stride;
    stride *= t.shape[d];
  }
  return k;
}

size_t Count(const Tensor& t) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  return n;
}

int RunSet(kope_kernel_fn kernel, const Set& set, int warmup, bool profile, uint64_t* rng,
           cudaStream_t stream) {
  std::vector<void*> buffers;
  std::vector<kope_tensor> inputs, outputs;
  auto release = [&] {
    for (void* b : buffers) cudaFree(b);
  };
  for (const auto* list : {&set.inputs, &set.outputs}) {
    for (const Tensor& t : *list) {
      const size_t bytes = Count(t) * kope::DTypeSize(t.dtype);
      void* d = nullptr;
      if (cudaError_t e = cudaMalloc(&d, bytes); e != cudaSuccess) {
        release();
        return Fail("cudaMalloc", e);
      }
      buffers.push_back(d);
      if (list == &set.inputs) {
        std::vector<uint8_t> host(bytes);
        Fill(&host, t.dtype, Count(t), rng);
        if (cudaError_t e = cudaMemcpy(d, host.data(), bytes, cudaMemcpyHostToDevice);
            e != cudaSuccess) {
          release();
          return Fail("copying inputs", e);
        }
        inputs.push_back(Describe(t, d));
      } else {
        outputs.push_back(Describe(t, d));
      }
    }
  }
  int status = 0;
  for (int call = 0; call <= warmup && status == 0; ++call) {
    const bool measured = call == warmup;
    if (measured && profile) cudaProfilerStart();
    std::vector<kope_tensor> in = inputs, out = outputs;
    const int rc = kernel(in.data(), static_cast<int>(in.size()), out.data(),
                          static_cast<int>(out.size()), stream);
    const cudaError_t e = cudaDeviceSynchronize();
    if (measured && profile) cudaProfilerStop();
    if (rc != 0) {
      std::fprintf(stderr, "kope-cuda-launch: the kernel returned %d\n", rc);
      status = 1;
    } else if (e != cudaSuccess) {
      status = Fail("after the kernel call", e);
    } else if (cudaError_t last = cudaGetLastError(); last != cudaSuccess) {
      status = Fail("the kernel left an error", last);
    }
  }
  release();
  return status;
}

constexpr char kUsage[] =
    "usage: kope-cuda-launch --kernel K.so [--device N] [--warmup W] [--profile]\n"
    "                        --set \"f32:1024x1024,f32:1024;f32:1024x1024\" [--set ...]\n";

}  // namespace

int main(int argc, char** argv) {
  std::string kernel_path;
  int device = 0, warmup = 1;
  bool profile = false;
  std::vector<Set> sets;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--profile") {
      profile = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "kope-cuda-launch: %s needs a value\n%s", argv[i], kUsage);
      return 2;
    }
    const std::string value = argv[++i];
    if (arg == "--kernel") {
      kernel_path = value;
    } else if (arg == "--device") {
      device = std::atoi(value.c_str());
    } else if (arg == "--warmup") {
      warmup = std::atoi(value.c_str());
    } else if (arg == "--set") {
      Set s;
      const size_t semi = value.find(';');
      if (semi == std::string::npos ||
          !ParseList(std::string_view(value).substr(0, semi), &s.inputs) ||
          !ParseList(std::string_view(value).substr(semi + 1), &s.outputs)) {
        std::fprintf(stderr, "kope-cuda-launch: bad --set '%s'\n%s", value.c_str(), kUsage);
        return 2;
      }
      sets.push_back(std::move(s));
    } else {
      std::fprintf(stderr, "kope-cuda-launch: unknown option %s\n%s", argv[i - 1], kUsage);
      return 2;
    }
  }
  if (kernel_path.empty() || sets.empty() || warmup < 0) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return Fail("cudaSetDevice", e);
  void* handle = dlopen(kernel_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "kope-cuda-launch: dlopen: %s\n", dlerror());
    return 1;
  }
  auto kernel = reinterpret_cast<kope_kernel_fn>(dlsym(handle, "kope_kernel"));
  if (kernel == nullptr) {
    std::fprintf(stderr, "kope-cuda-launch: no kope_kernel in %s\n", kernel_path.c_str());
    return 1;
  }
  cudaStream_t stream;
  if (cudaError_t e = cudaStreamCreate(&stream); e != cudaSuccess) {
    return Fail("cudaStreamCreate", e);
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (const Set& set : sets) {
    if (int rc = RunSet(kernel, set, warmup, profile, &rng, stream); rc != 0) return rc;
  }
  std::printf("kope-cuda-launch: %zu set(s) ok\n", sets.size());
  return 0;
}
