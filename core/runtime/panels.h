// The CPU's Cube operand formats (FractalA / FractalB) and the packing into them.
//
// The micro-kernel streams A as panels of 8 rows and B as panels of 16 columns, each
// panel stored depth-major (k outermost), so one k step reads 8 consecutive A values
// and 16 consecutive B values. Cube tile sizes are multiples of 16, so every L0
// sub-window of an L1 tile starts on a panel boundary and TMOV L1 -> L0 can hand the
// micro-kernel a pointer into L1 instead of copying.
//
//   A panels of a [rows, depth] matrix: (r, p) at (r / 8) * (8 * depth) + p * 8 + r % 8
//   B panels of a [depth, cols] matrix: (p, c) at (c / 16) * (16 * depth) + p * 16 + c % 16
//
// Packing reads any strided source (GM with views and transposes, fp16/bf16/fp32, or
// a row-major local buffer) and zero-fills panel lanes past the valid rows/cols.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/shape.h"

namespace pto::runtime {

constexpr int kPanelRowsA = 8;
constexpr int kPanelColsB = 16;

// Where packed panels live: `width` lanes per panel (8 for A, 16 for B), panels
// `panel_stride` floats apart; lane 0 of the first panel is `base`.
struct Panels {
  float* base = nullptr;
  int width = kPanelRowsA;
  int64_t panel_stride = 0;
  float& at(int64_t lane, int64_t depth) const {
    return base[(lane / width) * panel_stride + depth * width + lane % width];
  }
};

// Floats a panel buffer needs for `lanes` rows (A) / cols (B) of `depth`.
inline int64_t panel_elements(int width, int64_t lanes, int64_t depth) {
  return align_up(lanes, width) * depth;
}

// Packs the source matrix element (lane, p) = src[lane * lane_stride + p * depth_stride]
// (elements of `dtype`; strides may be 0 or negative-free arbitrary) for lane < lanes,
// p < depth, and zero-fills lanes [lanes, round_up(lanes, width)).
void pack_panels(const Panels& dst, int64_t lanes, int64_t depth, const void* src, DType dtype,
                 int64_t lane_stride, int64_t depth_stride);

// Copies (lane, p) for lane < lanes, p < depth from panels `src` starting at
// (lane0, depth0) to panels `dst` starting at 0, zero-filling lanes past `lanes` in the
// last panel: a TMOV L1 -> L0 that cannot be a view into L1.
void repack_panels(const Panels& dst, const Panels& src, int64_t lane0, int64_t depth0,
                   int64_t lanes, int64_t depth);

}  // namespace pto::runtime
