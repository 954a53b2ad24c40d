// Content hashes: the keys of the compile cache and of stored sources.
//
// ContentHash is XXH3-128 over the bytes, printed as 32 lowercase hex digits.
// It identifies content, it does not authenticate it. Thread-safe.
#ifndef KOPE_BASE_HASH_H_
#define KOPE_BASE_HASH_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace kope {

std::string ContentHash(std::string_view bytes);
// Hash of several parts, each length-prefixed so that ("ab","c") != ("a","bc").
std::string ContentHash(std::initializer_list<std::string_view> parts);
// 64-bit hash of a memory range, for detecting modified buffers (XXH3-64; ranges over 16 MiB
// are hashed in blocks on several threads).
uint64_t BufferHash(const void* data, size_t size);

}  // namespace kope

#endif  // KOPE_BASE_HASH_H_
