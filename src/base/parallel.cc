#include "kope/base/parallel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace kope {

int HardwareThreads() {
  static const int threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 64);
  return threads;
}

void ParallelFor(size_t count, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  grain = std::max<size_t>(grain, 1);
  const size_t pieces = std::min<size_t>(static_cast<size_t>(HardwareThreads()), count / grain);
  if (pieces < 2) {
    if (count > 0) fn(0, count);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(pieces - 1);
  auto bounds = [&](size_t k) { return count / pieces * k + std::min(k, count % pieces); };
  for (size_t k = 1; k < pieces; ++k) {
    threads.emplace_back([&, k] { fn(bounds(k), bounds(k + 1)); });
  }
  fn(0, bounds(1));
  for (std::thread& t : threads) t.join();
}

void ForEachBlock(size_t count, size_t block_size,
                  const std::function<void(size_t, size_t, size_t)>& fn) {
  block_size = std::max<size_t>(block_size, 1);
  const size_t blocks = (count + block_size - 1) / block_size;
  ParallelFor(blocks, 1, [&](size_t first, size_t last) {
    for (size_t b = first; b < last; ++b) {
      fn(b, b * block_size, std::min(count, (b + 1) * block_size));
    }
  });
}

void ParallelMemcpy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kGrain = 16u << 20;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  ParallelFor(bytes, kGrain,
              [&](size_t begin, size_t end) { std::memcpy(d + begin, s + begin, end - begin); });
}

}  // namespace kope
