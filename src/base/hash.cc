#include "kope/base/hash.h"

#include <xxhash.h>

#include <cstdio>

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

uint64_t BufferHash(const void* data, size_t size) { return XXH3_64bits(data, size); }

}  // namespace kope
