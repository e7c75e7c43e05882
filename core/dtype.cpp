// dtype names and sizes, and the 16-bit float formats.
//
// fp16 and bf16 are both "narrow" IEEE binary formats that differ only in their
// exponent and mantissa widths, so one encoder (from double, rounding to nearest
// even, with subnormals, overflow to inf and NaN) and one decoder serve both.
#include "core/dtype.h"

#include <bit>
#include <cmath>

#include "core/error.h"
#include "core/shown_value.h"

namespace pto {
namespace {

struct NarrowFormat {
  int exp_bits;
  int mant_bits;
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint32_t max_exp_field() const { return (1u << exp_bits) - 1; }
};
constexpr NarrowFormat kFp16{5, 10};
constexpr NarrowFormat kBf16{8, 7};

constexpr int kDoubleMantBits = 52;
constexpr int kDoubleBias = 1023;

uint16_t encode(double value, NarrowFormat f) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const uint32_t sign = static_cast<uint32_t>(bits >> 63) << (f.exp_bits + f.mant_bits);
  const int exp_field = static_cast<int>((bits >> kDoubleMantBits) & 0x7ff);
  const uint64_t mant = bits & ((uint64_t{1} << kDoubleMantBits) - 1);
  const uint32_t inf = f.max_exp_field() << f.mant_bits;

  if (exp_field == 0x7ff) {
    if (mant == 0) return static_cast<uint16_t>(sign | inf);
    // Quiet NaN, keeping the top payload bits.
    const uint32_t payload = static_cast<uint32_t>(mant >> (kDoubleMantBits - f.mant_bits));
    return static_cast<uint16_t>(sign | inf | (1u << (f.mant_bits - 1)) | payload);
  }
  // Double subnormals are far below half the narrow formats' smallest subnormal.
  if (exp_field == 0) return static_cast<uint16_t>(sign);

  // Biased exponent in the narrow format; <= 0 means the result is subnormal there,
  // which drops that many more mantissa bits.
  const int64_t exp = exp_field - kDoubleBias + f.bias();
  const uint64_t significand = mant | (uint64_t{1} << kDoubleMantBits);
  const int64_t drop = kDoubleMantBits - f.mant_bits + (exp >= 1 ? 0 : 1 - exp);
  if (drop > kDoubleMantBits + 1) return static_cast<uint16_t>(sign);  // below half the smallest subnormal

  uint64_t kept = significand >> drop;
  const uint64_t rest = significand & ((uint64_t{1} << drop) - 1);
  const uint64_t half = uint64_t{1} << (drop - 1);
  if (rest > half || (rest == half && (kept & 1))) ++kept;

  // `kept` carries the implicit bit, so adding it to (exp-1) in the exponent field
  // lets a rounding carry move into the exponent (and a subnormal become normal).
  const uint64_t magnitude = (exp >= 1 ? static_cast<uint64_t>(exp - 1) << f.mant_bits : 0) + kept;
  if (magnitude >= inf) return static_cast<uint16_t>(sign | inf);
  return static_cast<uint16_t>(sign | magnitude);
}

float decode(uint16_t h, NarrowFormat f) {
  const uint32_t sign = static_cast<uint32_t>(h >> (f.exp_bits + f.mant_bits)) << 31;
  const uint32_t exp_field = (h >> f.mant_bits) & f.max_exp_field();
  const uint32_t mant = h & ((1u << f.mant_bits) - 1);
  const int to_float_mant = 23 - f.mant_bits;

  if (exp_field == f.max_exp_field())
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << to_float_mant));
  if (exp_field == 0) {  // zero or subnormal: mant * 2^(1 - bias - mant_bits), exact in float
    const float magnitude = std::ldexp(static_cast<float>(mant), 1 - f.bias() - f.mant_bits);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t exp = exp_field + 127 - f.bias();
  return std::bit_cast<float>(sign | (exp << 23) | (mant << to_float_mant));
}

}  // namespace

int dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I8: return 1;
    case DType::Bool: return 1;
  }
  internal_error("dtype_size: unknown dtype " + std::to_string(static_cast<int>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "int32";
    case DType::I8: return "int8";
    case DType::Bool: return "bool";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I8, DType::Bool})
    if (name == dtype_name(t)) return t;
  usage_error("unknown dtype " + shown_value(name) +
              " (known: fp32, fp16, bf16, int32, int8, bool)");
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

float fp16_to_float(uint16_t h) { return decode(h, kFp16); }
uint16_t float_to_fp16(float f) { return encode(f, kFp16); }
float bf16_to_float(uint16_t h) { return decode(h, kBf16); }
uint16_t float_to_bf16(float f) { return encode(f, kBf16); }
uint16_t double_to_fp16(double d) { return encode(d, kFp16); }
uint16_t double_to_bf16(double d) { return encode(d, kBf16); }

}  // namespace pto
