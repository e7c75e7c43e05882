// A dense, row-major tensor in host memory: the data the CPU runtime reads and
// writes and the reference kernels compare against. Elements are stored in their
// own dtype (fp16/bf16 as 16-bit patterns); get/set convert through double.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace pto {

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(const Shape& shape, DType dtype);  // zero-filled

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t size() const { return num_elements(shape_); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  int64_t bytes() const { return static_cast<int64_t>(bytes_.size()); }

  double get(int64_t flat_index) const;
  void set(int64_t flat_index, double value);  // rounds to the dtype

  // Uniform values in [lo, hi) (integers for integer dtypes), deterministic per seed.
  static HostTensor random(const Shape& shape, DType dtype, uint64_t seed, double lo = -1.0,
                           double hi = 1.0);

 private:
  Shape shape_;
  DType dtype_ = DType::F32;
  std::vector<unsigned char> bytes_;
};

// Largest |a-b| over all elements (inf/nan compare equal to themselves); shapes must match.
double max_abs_diff(const HostTensor& a, const HostTensor& b);
// Whether `actual` is within the dtype's tolerance of `expected`:
// |a-e| <= atol + rtol*|e| per element, with atol/rtol chosen per dtype (and loosened
// by sqrt(reduction length) for accumulations, passed in as `accumulation`).
bool all_close(const HostTensor& actual, const HostTensor& expected, int64_t accumulation = 1);

}  // namespace pto
