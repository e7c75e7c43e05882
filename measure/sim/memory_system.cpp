#include "measure/sim/memory_system.h"

#include <algorithm>
#include <string>


namespace pto::sim {
namespace {

double bytes_per_cycle(double gbps, double clock_mhz) { return gbps * 1e3 / clock_mhz; }

// The tensor that owns the storage a view aliases (alias chains end: verified).
int storage_owner(const Program& p, int id) {
  while (p.tensors[id].alias_of >= 0) id = p.tensors[id].alias_of;
  return id;
}

}  // namespace

MemorySystem::MemorySystem(const Program& program, const Target& target, const SimOptions& options)
    : l2_(target.l2_bytes, options.l2_line_bytes),
      min_burst_bytes_(target.gm_min_burst_bytes),
      hbm_(bytes_per_cycle(target.hbm_gbps, target.clock_mhz)),
      l2_bandwidth_(bytes_per_cycle(target.l2_gbps, target.clock_mhz)) {
  const int64_t line = options.l2_line_bytes;
  const auto count = static_cast<int>(program.tensors.size());
  std::vector<int64_t> owner_base(count, -1);
  int64_t next = 0;
  for (int i = 0; i < count; ++i) {  // storage owners, line-aligned as an allocator would
    const GmTensor& t = program.tensors[i];
    if (t.alias_of >= 0) continue;
    owner_base[i] = next;
    next += align_up(std::max<int64_t>(num_elements(t.shape) * dtype_size(t.dtype), 1), line);
  }
  l2_.reserve(next / line);
  placement_.resize(count);
  for (int i = 0; i < count; ++i) {
    const GmTensor& t = program.tensors[i];
    Placement& p = placement_[i];
    p.base = owner_base[storage_owner(program, i)];
    p.elem_bytes = dtype_size(t.dtype);
    p.elem_offset = t.alias_of >= 0 ? t.elem_offset : 0;
    p.strides = t.alias_of >= 0 ? t.strides : contiguous_strides(t.shape);
  }
}

// Calls visit(byte address, byte length) for each contiguous run of the window; the
// window's dims are right-aligned with the tensor's when it has fewer.
template <class Visit>
void MemorySystem::for_each_run(const Placement& p, const Operand& window, const Shape& origin, Visit&& visit) const {
  const size_t rank = p.strides.size();
  if (rank == 0) return visit(p.base + p.elem_offset * p.elem_bytes, int64_t{p.elem_bytes});
  Shape extent(rank, 1), first(rank, 0);
  for (size_t i = 0; i < window.extent.size() && i < rank; ++i)
    extent[rank - 1 - i] = window.extent[window.extent.size() - 1 - i];
  for (size_t i = 0; i < window.offset.size() && i < rank; ++i)
    first[rank - 1 - i] += window.offset[window.offset.size() - 1 - i];
  for (size_t i = 0; i < origin.size() && i < rank; ++i) first[rank - 1 - i] += origin[origin.size() - 1 - i];
  if (num_elements(extent) <= 0) return;

  int64_t start = p.elem_offset;
  for (size_t d = 0; d < rank; ++d) start += first[d] * p.strides[d];
  const int64_t inner_stride = p.strides[rank - 1];
  const int64_t inner = extent[rank - 1];
  // A contiguous (or broadcast) innermost dim is one run; any other stride, one per element.
  const bool one_run = inner_stride == 1 || inner_stride == 0;
  const int64_t run_elems = inner_stride == 1 ? inner : 1;
  Shape index(rank, 0);
  while (true) {
    int64_t elem = start;
    for (size_t d = 0; d + 1 < rank; ++d) elem += index[d] * p.strides[d];
    if (one_run) {
      visit(p.base + elem * p.elem_bytes, run_elems * p.elem_bytes);
    } else {
      for (int64_t j = 0; j < inner; ++j) visit(p.base + (elem + j * inner_stride) * p.elem_bytes, int64_t{p.elem_bytes});
    }
    size_t d = rank - 1;  // odometer over the outer dims
    while (d > 0 && ++index[d - 1] == extent[d - 1]) index[--d] = 0;
    if (d == 0) return;
  }
}

MemorySystem::LineTally MemorySystem::touch_lines(const Placement& p, const Operand& window, const Shape& origin,
                                                  double start, bool write, bool fetch) {
  LineTally tally;
  filled_.clear();
  const int64_t line_bytes = l2_.line_bytes();
  // Rows that follow one another in GM (a window spanning whole rows) are one run for
  // the DMA, so bursts are counted per merged run.
  int64_t run_end = -1;
  double run_bytes = 0;
  auto close_run = [&] {
    if (run_bytes > 0) tally.burst_bytes += std::max(run_bytes, min_burst_bytes_);
    run_bytes = 0;
  };
  for_each_run(p, window, origin, [&](int64_t addr, int64_t len) {
    tally.bytes += static_cast<double>(len);
    if (addr != run_end) close_run();
    run_bytes += static_cast<double>(len);
    run_end = addr + len;
    for (int64_t line = l2_.line_of(addr), last = l2_.line_of(addr + len - 1); line <= last; ++line) {
      const int64_t in_line = std::min(addr + len, (line + 1) * line_bytes) - std::max(addr, line * line_bytes);
      const L2Cache::Access a = l2_.touch(line, write);
      tally.written_back += a.writes_back;
      if (a.hit) {
        // A line another core is still fetching is found, but only arrives with that fill.
        (a.ready > start ? tally.inflight_bytes : tally.hit_bytes) += static_cast<double>(in_line);
        tally.ready = std::max(tally.ready, a.ready);
      } else if (fetch) {
        ++tally.miss_lines;
      }
      if (a.slot >= 0 && (!a.hit || write)) filled_.push_back(a.slot);
    }
  });
  close_run();
  return tally;
}

// The DMA moves each contiguous run as whole bursts and issues them no faster than the
// path's own (L2-hit) rate: short rows take at least runs x burst / hit rate. Data that
// must come from HBM at the slower fill rate mostly takes longer than its bursts anyway,
// so the floor binds on rows served by the L2 (asc-devkit: 8192^3 matmul loads of
// 128-byte rows from L2 at a third of the L2 rate), not on rows streamed from HBM
// (asc-devkit data_copy: 128-byte rows from HBM 1.1-1.3x slower than 2 KB rows, not 3x).
double MemorySystem::burst_floor_cycles(const LineTally& t, const PlannedStep& step) const {
  return min_burst_bytes_ > 0 ? t.burst_bytes / step.hit_bytes_per_cycle : 0;
}

double MemorySystem::transfer(double start, const PlannedStep& step, const Operand& window,
                              const TensorBinding& binding) {
  const bool read = step.kind != StepKind::GmWrite;
  const bool write = step.kind != StepKind::GmRead;
  const LineTally t = touch_lines(placement_[binding.tensor], window, binding.origin, start, write, read);
  const double line_bytes = static_cast<double>(l2_.line_bytes());
  const double hbm_bytes = (t.miss_lines + t.written_back) * line_bytes;
  const double miss_bytes = read ? t.bytes - t.hit_bytes - t.inflight_bytes : 0;
  const double hit_bytes = t.bytes - miss_bytes;

  const double data_from = start + step.latency;
  const double byte_cycles = hit_bytes / step.hit_bytes_per_cycle + miss_bytes / step.miss_bytes_per_cycle;
  const double core_done = data_from + std::max(byte_cycles, burst_floor_cycles(t, step));
  const double l2_done = l2_bandwidth_.reserve(data_from, t.bytes);
  const double hbm_done = hbm_.reserve(data_from, hbm_bytes);
  const double end = std::max({core_done, l2_done, hbm_done, t.ready});
  // Lines this transfer brought in (or wrote) are there for other cores only from now.
  for (int32_t slot : filled_) l2_.set_ready(slot, end);

  if (read) totals_.gm_read_bytes += t.bytes, totals_.l2_hit_bytes += t.hit_bytes;
  if (write) totals_.gm_write_bytes += t.bytes;
  totals_.hbm_read_bytes += t.miss_lines * line_bytes;
  totals_.hbm_write_bytes += t.written_back * line_bytes;
  return end;
}

double MemorySystem::workspace_transfer(double start, const PlannedStep& step) {
  const double data_from = start + step.latency;
  const double core_done = data_from + step.bytes / step.hit_bytes_per_cycle;
  totals_.workspace_bytes += step.bytes;
  return std::max(core_done, l2_bandwidth_.reserve(data_from, step.bytes));
}

MemoryTotals MemorySystem::totals() const {
  MemoryTotals out = totals_;
  // Dirty lines still in L2 reach HBM eventually; their traffic is counted, not timed.
  out.hbm_write_bytes += static_cast<double>(l2_.dirty_lines() * l2_.line_bytes());
  out.hbm_busy_cycles = hbm_.busy_cycles();
  out.l2_busy_cycles = l2_bandwidth_.busy_cycles();
  return out;
}

}  // namespace pto::sim
