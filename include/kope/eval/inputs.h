// Drawing test inputs and poisoning outputs.
//
// Inputs come from a generator seeded from a fresh secret (std::random_device)
// per trial by the evaluator; this header only turns a generator and a
// Distribution into values. Poison patterns are bit patterns an unwritten
// output is caught by: two different NaN patterns for floating outputs (and
// a finite one, for outputs whose reference is NaN), odd constants for
// integers. Pure functions; thread-safe.
#ifndef KOPE_EVAL_INPUTS_H_
#define KOPE_EVAL_INPUTS_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "kope/task/task.h"

namespace kope {

// Fills `count` elements of `dtype` at `data` with draws from `dist`.
void FillInput(void* data, DType dtype, size_t count, const Distribution& dist,
               std::mt19937_64& rng);

enum class Poison { kNanA, kNanB, kFinite };

// Fills `count` elements with the poison pattern.
void FillPoison(void* data, DType dtype, size_t count, Poison poison);

// Guard bytes written after every output: a repeating pattern checked after each call.
void FillGuard(uint8_t* data, size_t bytes);
// One element's poison bit pattern, and the guard's first `bytes` bytes, for a runner that
// writes them itself (the reference runner checking a candidate's tensors).
std::string PoisonElement(DType dtype, Poison poison);
std::string GuardBytes(size_t bytes);
// The first byte offset where the guard differs from its pattern, or -1.
int64_t FirstGuardDamage(const uint8_t* data, size_t bytes);

}  // namespace kope

#endif  // KOPE_EVAL_INPUTS_H_
