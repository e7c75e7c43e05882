// HostTensor storage and element access, seeded random fill, and the comparisons
// that verification uses (max_abs_diff, all_close with per-dtype tolerances).
#include "core/host_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace pto {
namespace {

template <typename T>
T load(const std::vector<unsigned char>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void store(std::vector<unsigned char>& bytes, int64_t i, T v) {
  std::memcpy(bytes.data() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// Integer stores round to nearest even and saturate, so that no value is undefined.
template <typename Int>
Int round_saturating(double v) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r <= std::numeric_limits<Int>::min()) return std::numeric_limits<Int>::min();
  if (r >= std::numeric_limits<Int>::max()) return std::numeric_limits<Int>::max();
  return static_cast<Int>(r);
}

// Relative (and absolute, values being O(1)) tolerance of one rounding or two in the dtype.
double base_tolerance(DType t) {
  switch (t) {
    case DType::F32: return 1e-5;
    case DType::F16: return 2e-3;
    case DType::BF16: return 1.6e-2;
    default: return 0;  // integers and bools compare exactly
  }
}

void check_same_shape(const HostTensor& a, const HostTensor& b, const char* what) {
  if (a.shape() != b.shape())
    usage_error(std::string(what) + ": shapes differ: " + shape_str(a.shape()) + " vs " +
                shape_str(b.shape()));
}

bool same_special(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Uniform 64-bit stream that is the same on every platform (std distributions are not).
class SeededStream {
 public:
  explicit SeededStream(uint64_t seed) : engine_(seed) {}
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t below(uint64_t n) { return engine_() % n; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

HostTensor::HostTensor(const Shape& shape, DType dtype) : shape_(shape), dtype_(dtype) {
  for (int64_t d : shape)
    if (d < 0) usage_error("HostTensor: shape " + shape_str(shape) + " has a negative size");
  bytes_.assign(static_cast<size_t>(size() * dtype_size(dtype)), 0);
}

double HostTensor::get(int64_t i) const {
  if (i < 0 || i >= size())
    internal_error("HostTensor::get: index " + std::to_string(i) + " outside " + shape_str(shape_));
  switch (dtype_) {
    case DType::F32: return load<float>(bytes_, i);
    case DType::F16: return fp16_to_float(load<uint16_t>(bytes_, i));
    case DType::BF16: return bf16_to_float(load<uint16_t>(bytes_, i));
    case DType::I32: return load<int32_t>(bytes_, i);
    case DType::I8: return load<int8_t>(bytes_, i);
    case DType::Bool: return load<uint8_t>(bytes_, i) ? 1.0 : 0.0;
  }
  internal_error("HostTensor::get: unknown dtype");
}

void HostTensor::set(int64_t i, double v) {
  if (i < 0 || i >= size())
    internal_error("HostTensor::set: index " + std::to_string(i) + " outside " + shape_str(shape_));
  switch (dtype_) {
    case DType::F32: return store<float>(bytes_, i, static_cast<float>(v));
    case DType::F16: return store<uint16_t>(bytes_, i, double_to_fp16(v));
    case DType::BF16: return store<uint16_t>(bytes_, i, double_to_bf16(v));
    case DType::I32: return store<int32_t>(bytes_, i, round_saturating<int32_t>(v));
    case DType::I8: return store<int8_t>(bytes_, i, round_saturating<int8_t>(v));
    case DType::Bool: return store<uint8_t>(bytes_, i, v != 0 ? 1 : 0);
  }
}

HostTensor HostTensor::random(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  if (!(lo < hi))
    usage_error("HostTensor::random: empty range [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  HostTensor t(shape, dtype);
  SeededStream stream(seed);
  if (is_float(dtype)) {
    for (int64_t i = 0; i < t.size(); ++i) t.set(i, lo + (hi - lo) * stream.unit());
    return t;
  }
  const double first = std::ceil(lo);
  const double count = std::ceil(hi) - first;  // integers in [lo, hi)
  if (count < 1)
    usage_error("HostTensor::random: no integer in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + ") for " + dtype_name(dtype));
  for (int64_t i = 0; i < t.size(); ++i)
    t.set(i, first + static_cast<double>(stream.below(static_cast<uint64_t>(count))));
  return t;
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  check_same_shape(a, b, "max_abs_diff");
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.get(i), y = b.get(i);
    if (same_special(x, y)) continue;
    const double diff = std::abs(x - y);
    worst = std::max(worst, std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff);
  }
  return worst;
}

bool all_close(const HostTensor& actual, const HostTensor& expected, int64_t accumulation) {
  check_same_shape(actual, expected, "all_close");
  const double tol = std::max(base_tolerance(actual.dtype()), base_tolerance(expected.dtype())) *
                     std::sqrt(static_cast<double>(std::max<int64_t>(accumulation, 1)));
  for (int64_t i = 0; i < actual.size(); ++i) {
    const double a = actual.get(i), e = expected.get(i);
    if (same_special(a, e)) continue;
    if (!std::isfinite(a) || !std::isfinite(e)) return false;
    if (!(std::abs(a - e) <= tol + tol * std::abs(e))) return false;
  }
  return true;
}

}  // namespace pto
