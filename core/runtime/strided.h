// Strided N-d windows and the row iteration every data-moving loop of the runtime
// shares.
//
// A window is a base pointer, a dtype and a stride per dim (in elements; 0 broadcasts).
// for_each_row walks an extent over a few windows at once: it drops size-1 dims,
// merges dims that are contiguous in every window, and calls the body once per
// innermost row, so the body is a plain 1-D loop the compiler can vectorise.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "core/shape.h"

namespace pto::runtime {

constexpr int kMaxRank = 8;

struct Dims {
  int rank = 0;
  std::array<int64_t, kMaxRank> v{};

  static Dims of(const Shape& s);  // internal Error beyond kMaxRank dims
  int64_t operator[](int i) const { return v[i]; }
  int64_t& operator[](int i) { return v[i]; }
  int64_t elements() const;
  Shape shape() const { return Shape(v.begin(), v.begin() + rank); }
  int64_t back(int from_end = 0) const { return v[rank - 1 - from_end]; }
};

// A transposed operand's view: its last two dims (or their strides) swapped.
inline void swap_last_two(Dims& d) {
  if (d.rank >= 2) std::swap(d[d.rank - 1], d[d.rank - 2]);
}

struct View {
  char* ptr = nullptr;
  DType dtype = DType::F32;  // how the elements are stored (F32/I32 for local lanes)
  Dims strides;              // in elements, one per dim of the extent it is used with
};

// Row-major strides of a buffer shape.
Dims row_major_strides(const Dims& shape);

// How a source window's dims pair with the destination extent's.
enum class Match {
  // Vector operands: dims pair from the right; missing or extent-1 source dims
  // broadcast (stride 0); extra leading source dims must be 1.
  Broadcast,
  // Copies (TLOAD/TSTORE/TMOV): the same elements in possibly different ranks, e.g. a
  // GM window [64] against a UB window [64,1]: extent-1 dims are ignored on both sides.
  // Falls back to Broadcast when the element counts differ.
  SameElements,
};

// Strides of `src` (extent `src_extent`, strides `src_strides`) for iterating
// `dst_extent`. Broadcast falls back to SameElements when the dims do not pair up.
// Internal Error naming both extents and `what` when neither works.
Dims align_strides(const Dims& dst_extent, const Dims& src_extent, const Dims& src_strides,
                   Match match, const std::string& what);

// Calls body(ptrs, n, inner_strides) for every innermost row of `extent` over the N
// views: ptrs[i] points at the row's first element of view i, inner_strides[i] is its
// element stride along the row.
template <int N, typename Body>
void for_each_row(const Dims& extent, const std::array<const View*, N>& views, Body&& body) {
  std::array<int, N> elem_size;
  for (int i = 0; i < N; ++i) elem_size[i] = dtype_size(views[i]->dtype);

  // Keep dims of size > 1, merging a dim into the next when every view is contiguous across them.
  int rank = 0;
  std::array<int64_t, kMaxRank> ext{};
  std::array<std::array<int64_t, kMaxRank>, N> st{};
  for (int d = 0; d < extent.rank; ++d) {
    if (extent[d] == 1) continue;
    if (extent[d] <= 0) return;
    bool merge = rank > 0;
    for (int i = 0; i < N && merge; ++i) merge = st[i][rank - 1] == views[i]->strides[d] * extent[d];
    if (merge) {
      ext[rank - 1] *= extent[d];
      for (int i = 0; i < N; ++i) st[i][rank - 1] = views[i]->strides[d];
      continue;
    }
    ext[rank] = extent[d];
    for (int i = 0; i < N; ++i) st[i][rank] = views[i]->strides[d];
    ++rank;
  }
  std::array<char*, N> row;
  std::array<int64_t, N> inner;
  for (int i = 0; i < N; ++i) row[i] = views[i]->ptr;
  if (rank == 0) {
    for (int i = 0; i < N; ++i) inner[i] = 0;
    body(row, int64_t{1}, inner);
    return;
  }
  const int64_t n = ext[rank - 1];
  for (int i = 0; i < N; ++i) inner[i] = st[i][rank - 1];
  std::array<int64_t, kMaxRank> idx{};
  const int outer = rank - 1;
  while (true) {
    body(row, n, inner);
    int d = outer - 1;
    for (; d >= 0; --d) {
      for (int i = 0; i < N; ++i) row[i] += st[i][d] * elem_size[i];
      if (++idx[d] < ext[d]) break;
      for (int i = 0; i < N; ++i) row[i] -= st[i][d] * elem_size[i] * ext[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace pto::runtime
