// Element types of tensors, their sizes, names and the fp16/bf16 <-> fp32 conversions.
//
// fp16 and bf16 are stored as 16-bit patterns and computed in fp32 on the CPU, as the
// Ascend vector unit does for most ops.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pto {

enum class DType : uint8_t { F32, F16, BF16, I32, I8, Bool };

int dtype_size(DType t);                    // bytes per element
const char* dtype_name(DType t);            // "fp32", "fp16", "bf16", "int32", "int8", "bool"
DType parse_dtype(std::string_view name);   // throws usage Error naming the bad value
bool is_float(DType t);

float fp16_to_float(uint16_t h);
uint16_t float_to_fp16(float f);            // round to nearest even
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);            // round to nearest even
// Directly from double, rounding once (rounding through float first could round twice).
uint16_t double_to_fp16(double d);
uint16_t double_to_bf16(double d);

}  // namespace pto
