// The step loop of one task.
#include "core/runtime/task_runner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "core/runtime/copy.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/vector_ops.h"

namespace pto::runtime {
namespace {

// A GM operand normalised to its tensor's rank: where it starts and what it spans.
struct GmWindow {
  Dims offset;  // from the tensor's element 0: binding origin + operand offset
  Dims extent;
};

// Leading operand dims beyond the tensor's rank must be trivial; missing ones are 0/1.
bool normalize(const GmLayout& l, const TensorBinding& b, const GmOperand& op, GmWindow* w) {
  const int rank = l.shape.rank, q = static_cast<int>(op.extent.size());
  if (static_cast<int>(b.origin.size()) != rank) return false;
  if (!op.offset.empty() && op.offset.size() != op.extent.size()) return false;
  const int extra = q - rank;
  auto off = [&](int od) { return op.offset.empty() ? 0 : op.offset[od]; };
  for (int od = 0; od < extra; ++od)
    if (off(od) != 0 || op.extent[od] != 1) return false;
  w->offset.rank = w->extent.rank = rank;
  for (int d = 0; d < rank; ++d) {
    const int od = d + extra;
    w->offset[d] = b.origin[d] + (od >= 0 ? off(od) : 0);
    w->extent[d] = od >= 0 ? op.extent[od] : 1;
  }
  return true;
}

int64_t dot(const Dims& a, const Dims& b) {
  int64_t s = 0;
  for (int d = 0; d < a.rank; ++d) s += a[d] * b[d];
  return s;
}

// Two-dim view of a matrix window: `rows x cols` with strides for each.
struct Matrix {
  int64_t rows = 1, cols = 1;
  int64_t row_stride = 0, col_stride = 0;
};

Matrix as_matrix(const Dims& dst_extent, const Dims& src_extent, const Dims& src_strides,
                 const std::string& what) {
  Matrix m;
  m.rows = dst_extent.rank >= 2 ? dst_extent.back(1) : 1;
  m.cols = dst_extent.rank >= 1 ? dst_extent.back(0) : 1;
  Dims two;
  two.rank = 2;
  two[0] = m.rows;
  two[1] = m.cols;
  const Dims st = align_strides(two, src_extent, src_strides, Match::SameElements, what);
  m.row_stride = st[0];
  m.col_stride = st[1];
  return m;
}

// Packs a matrix into A panels (lanes = rows) or B panels (lanes = cols).
void pack_matrix(const Panels& dst, const Matrix& m, const void* src, DType dtype) {
  if (dst.width == kPanelRowsA) return pack_panels(dst, m.rows, m.cols, src, dtype, m.row_stride, m.col_stride);
  pack_panels(dst, m.cols, m.rows, src, dtype, m.col_stride, m.row_stride);
}

// The panels of `buf` holding the window that starts at `offset`.
Panels panels_at(const DecodedBuffer& buf, const float* base, int64_t panel_stride, const Dims& offset) {
  const bool is_a = buf.panel_width == kPanelRowsA;
  const int64_t lane = is_a ? offset.back(1) : offset.back(0);
  const int64_t depth = is_a ? offset.back(0) : offset.back(1);
  return {const_cast<float*>(base) + (lane / buf.panel_width) * panel_stride + depth * buf.panel_width,
          buf.panel_width, panel_stride};
}

class StepRunner {
 public:
  StepRunner(const Task& task, const DecodedBlock& plan, const GmSpace& gm, Scratch& scratch,
             std::array<std::mutex, 64>& locks)
      : task_(task), plan_(plan), gm_(gm), scratch_(scratch), arena_(scratch.arena()), locks_(locks) {}

  void run() {
    for (size_t b = 0; b < plan_.buffers.size(); ++b) {
      const DecodedBuffer& buf = plan_.buffers[b];
      if (buf.panel_width) scratch_.l0()[b] = {floats(buf.arena_offset), buf.panel_stride};
    }
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      step_ = i;
      run_step(plan_.steps[i]);
    }
  }

 private:
  float* floats(int64_t byte_offset) const { return reinterpret_cast<float*>(arena_ + byte_offset); }
  // Names the step in errors; a reference, so the hot path builds no strings.
  const std::string& what() const { return plan_.labels[step_]; }

  View local_view(const LocalOperand& l) const {
    return {arena_ + l.byte_offset, plan_.buffers[l.buf].lane, l.strides};
  }

  // The GM view of an operand (validated at construction) and its window.
  View gm_view(const GmOperand& op, GmWindow* w) const {
    const TensorBinding& b = task_.bindings[op.slot];
    const GmLayout& l = gm_.layout(b.tensor);
    normalize(l, b, op, w);
    return {gm_.base(b.tensor) + dot(w->offset, l.strides) * dtype_size(l.dtype), l.dtype, l.strides};
  }

  void run_step(const Step& s) {
    switch (s.kind) {
      case StepKind::LoadPanels: return load_panels(s);
      case StepKind::LoadRows: return load_rows(s);
      case StepKind::MovView: return mov_view(s);
      case StepKind::MovPanels: return mov_panels(s);
      case StepKind::Matmul: return matmul(s);
      case StepKind::Vector: return vector(s);
      case StepKind::Reduce:
        return reduce(s.vop, local_view(s.dst), local_view(s.a), s.extent, s.reduce_dim);
      case StepKind::Fill:
        return fill(local_view(s.dst), s.extent, *s.scalar, plan_.buffers[s.dst.buf].dtype);
      case StepKind::Mask: return mask(s);
      case StepKind::Store: return store(s);
    }
  }

  // A TLOAD's source as the destination sees it: with `transpose`, GM holds the
  // operand with its last two dims swapped.
  View load_source(const Step& s, GmWindow* w) const {
    View src = gm_view(s.gm, w);
    if (s.transpose) {
      swap_last_two(w->extent);
      swap_last_two(src.strides);
    }
    return src;
  }

  void load_panels(const Step& s) {
    GmWindow w;
    const View src = load_source(s, &w);
    const DecodedBuffer& buf = plan_.buffers[s.dst.buf];
    if (s.clear_first) std::memset(arena_ + buf.arena_offset, 0, static_cast<size_t>(buf.bytes));
    const Matrix m = as_matrix(s.dst.extent, w.extent, src.strides, what());
    pack_matrix(panels_at(buf, floats(buf.arena_offset), buf.panel_stride, s.dst.offset), m, src.ptr, src.dtype);
  }

  void load_rows(const Step& s) {
    GmWindow w;
    View src = load_source(s, &w);
    src.strides = align_strides(s.dst.extent, w.extent, src.strides, Match::SameElements, what());
    copy_window(local_view(s.dst), src, s.dst.extent, false);
  }

  void mov_view(const Step& s) {
    const DecodedBuffer& l1 = plan_.buffers[s.a.buf];
    const Panels p = panels_at(l1, floats(l1.arena_offset), l1.panel_stride, s.a.offset);
    scratch_.l0()[s.dst.buf] = {p.base, p.panel_stride};
  }

  void mov_panels(const Step& s) {
    const DecodedBuffer& buf = plan_.buffers[s.dst.buf];
    float* own = floats(buf.arena_offset);
    if (s.clear_first) std::memset(own, 0, static_cast<size_t>(buf.bytes));
    scratch_.l0()[s.dst.buf] = {own, buf.panel_stride};
    const Panels dst = panels_at(buf, own, buf.panel_stride, s.dst.offset);
    const DecodedBuffer& src = plan_.buffers[s.a.buf];
    if (!src.panel_width) {
      const Matrix m = as_matrix(s.dst.extent, s.dst.extent, s.a.strides, what());
      return pack_matrix(dst, m, arena_ + s.a.byte_offset, src.lane);
    }
    const bool is_a = buf.panel_width == kPanelRowsA;
    const Dims& o = s.a.offset;
    const Dims& e = s.a.extent;
    const Panels from{floats(src.arena_offset), src.panel_width, src.panel_stride};
    if (is_a) return repack_panels(dst, from, o.back(1), o.back(0), e.back(1), e.back(0));
    repack_panels(dst, from, o.back(0), o.back(1), e.back(0), e.back(1));
  }

  void matmul(const Step& s) {
    const PanelRef& a = scratch_.l0()[s.a.buf];
    const PanelRef& b = scratch_.l0()[s.b.buf];
    const Panels pa = panels_at(plan_.buffers[s.a.buf], a.base, a.panel_stride, s.a.offset);
    const Panels pb = panels_at(plan_.buffers[s.b.buf], b.base, b.panel_stride, s.b.offset);
    const int64_t m = s.a.extent.back(1), k = s.a.extent.back(0), n = s.b.extent.back(0);
    const DecodedBuffer& c = plan_.buffers[s.dst.buf];
    const int64_t ldc = c.strides.back(1);
    if (c.lane == DType::I32)
      return gemm_panels_int32(m, n, k, pa.base, pa.panel_stride, pb.base, pb.panel_stride,
                               reinterpret_cast<int32_t*>(arena_ + s.dst.byte_offset), ldc, s.accumulate);
    gemm_panels(m, n, k, pa.base, pa.panel_stride, pb.base, pb.panel_stride, floats(s.dst.byte_offset), ldc,
                s.accumulate);
  }

  void vector(const Step& s) {
    const View a = local_view(s.a);
    const View b = s.has_b ? local_view(s.b) : View{};
    ElementwiseArgs args;
    args.op = s.vop;
    args.a = &a;
    args.b = s.has_b ? &b : nullptr;
    args.scalar = s.scalar;
    args.scalar_first = s.scalar_first;
    args.dst_dtype = plan_.buffers[s.dst.buf].dtype;
    elementwise(local_view(s.dst), s.extent, args);
  }

  void mask(const Step& s) {
    GmWindow w;
    gm_view(s.gm, &w);
    const GmLayout& l = gm_.layout(task_.bindings[s.gm.slot].tensor);
    MaskPosition pos;
    const int r = l.shape.rank;
    pos.rows = r >= 2 ? l.shape.back(1) : 1;
    pos.cols = r >= 1 ? l.shape.back(0) : 1;
    pos.row0 = r >= 2 ? w.offset.back(1) : 0;
    pos.col0 = r >= 1 ? w.offset.back(0) : 0;
    causal_mask(local_view(s.dst), local_view(s.a), s.extent, pos);
  }

  void store(const Step& s) {
    GmWindow w;
    const View dst = gm_view(s.gm, &w);
    View src = local_view(s.a);
    src.strides = align_strides(w.extent, s.a.extent, plan_.buffers[s.a.buf].strides, Match::SameElements, what());
    if (!s.accumulate) return copy_window(dst, src, w.extent, false);
    const size_t stripe = (std::hash<const void*>{}(dst.ptr) >> 6) % locks_.size();
    std::lock_guard<std::mutex> guard(locks_[stripe]);
    copy_window(dst, src, w.extent, true);
  }

  const Task& task_;
  const DecodedBlock& plan_;
  const GmSpace& gm_;
  Scratch& scratch_;
  char* arena_;
  std::array<std::mutex, 64>& locks_;
  size_t step_ = 0;
};

}  // namespace

void Scratch::Free::operator()(char* p) const { std::free(p); }

Scratch::Scratch(int64_t arena_bytes, size_t max_buffers)
    : arena_(static_cast<char*>(std::aligned_alloc(64, static_cast<size_t>(align_up(std::max<int64_t>(arena_bytes, 64), 64))))),
      l0_(max_buffers) {
  if (!arena_) fail(ErrorCategory::Internal, "runtime: out of memory for " + std::to_string(arena_bytes) + " B of scratch");
  // Fresh scratch is zero, like the buffers of a core that has not run anything yet.
  std::memset(arena_.get(), 0, static_cast<size_t>(align_up(std::max<int64_t>(arena_bytes, 64), 64)));
}

TaskRunner::TaskRunner(const Program& program, const GmSpace& gm) : program_(program), gm_(gm) {
  for (const BlockProgram& b : program.blocks) {  // verified: block ids are indices
    plans_.push_back(decode_block(b));
    arena_bytes_ = std::max(arena_bytes_, plans_.back().arena_bytes);
    max_buffers_ = std::max(max_buffers_, plans_.back().buffers.size());
  }
  for (const Task& t : program.tasks) check_gm_windows(t);
}

void TaskRunner::check_gm_windows(const Task& task) const {
  const std::string who = "task " + std::to_string(task.id);
  const DecodedBlock& plan = plans_[task.block];
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    if (s.gm.slot < 0) continue;
    const TensorBinding& b = task.bindings[s.gm.slot];
    const GmLayout& l = gm_.layout(b.tensor);
    GmWindow w;
    bool inside = normalize(l, b, s.gm, &w);
    for (int d = 0; inside && d < l.shape.rank; ++d)
      inside = w.offset[d] >= 0 && w.extent[d] >= 0 && w.offset[d] + w.extent[d] <= l.shape[d];
    if (!inside)
      internal_error("runtime: " + plan.labels[i] + ": " + who + " window at origin " + shape_str(b.origin) +
                     " + " + shape_str(s.gm.offset) + " of " + shape_str(s.gm.extent) + " leaves tensor " +
                     std::to_string(b.tensor) + " " + shape_str(l.shape.shape()));
  }
}

void TaskRunner::run(int task, Scratch& scratch) const {
  const Task& t = program_.tasks[task];
  StepRunner(t, plans_[t.block], gm_, scratch, store_locks_).run();
}

}  // namespace pto::runtime
