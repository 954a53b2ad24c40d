// Element types of kope tensors: names, sizes and conversions.
//
// The enum is the C ABI's kope_dtype (include/kope/kernel.h). Names are the
// ones task files use: f32, f64, f16, bf16, i32, i64, bool. Conversions to and
// from double are exact for f32/f64/i32 and round-to-nearest-even for f16/bf16;
// a bool stores 0 or 1 and loads its byte as it is.
#ifndef KOPE_TASK_DTYPE_H_
#define KOPE_TASK_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kope/kernel.h"

namespace kope {

using DType = kope_dtype;

std::string_view DTypeName(DType dtype);
// nullopt for an unknown name.
std::optional<DType> ParseDType(std::string_view name);
size_t DTypeSize(DType dtype);
bool IsFloating(DType dtype);

// Element i of a buffer of `dtype`, widened to double.
double LoadAsDouble(const void* data, DType dtype, size_t i);
// Stores `v` as element i, rounding to the dtype (saturating for integers).
void StoreFromDouble(void* data, DType dtype, size_t i, double v);

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace kope

#endif  // KOPE_TASK_DTYPE_H_
