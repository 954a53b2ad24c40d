#include "kope/base/hash.h"

#include <xxhash.h>

#include <cstdio>
#include <vector>

#include "kope/base/parallel.h"

namespace kope {
namespace {

std::string Hex(XXH128_hash_t h) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string(buf, 32);
}

}  // namespace

std::string ContentHash(std::string_view bytes) {
  return Hex(XXH3_128bits(bytes.data(), bytes.size()));
}

std::string ContentHash(std::initializer_list<std::string_view> parts) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (std::string_view part : parts) {
    uint64_t n = part.size();
    XXH3_128bits_update(state, &n, sizeof(n));
    XXH3_128bits_update(state, part.data(), part.size());
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return Hex(h);
}

uint64_t BufferHash(const void* data, size_t size) {
  // Large buffers: the hashes of fixed 16 MiB blocks, hashed in parallel, then hashed together
  // with the size as seed. The value depends on the bytes only, never on the thread count.
  constexpr size_t kBlock = 16u << 20;
  if (size <= kBlock) return XXH3_64bits(data, size);
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::vector<uint64_t> blocks((size + kBlock - 1) / kBlock);
  ForEachBlock(size, kBlock, [&](size_t b, size_t begin, size_t end) {
    blocks[b] = XXH3_64bits(bytes + begin, end - begin);
  });
  return XXH3_64bits_withSeed(blocks.data(), blocks.size() * sizeof(uint64_t), size);
}

}  // namespace kope
