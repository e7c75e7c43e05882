// The host cost model (see host_model.h).
#include "cost_model/host_model.h"

#include <algorithm>
#include <utility>

#include "cost_model/kernel_header.h"
#include "cost_model/l2_traffic.h"

namespace pto {

namespace {

// Nominal rates of the CPU runtime, in cycles or bytes per cycle of one core; the
// coefficients scale them (calibration fits them to measured runs). From the shape of
// the runtime's loops, results/cpu_matmul.md's profile (packing ~11 % of a 2048^3 run
// next to ~64 % in the micro-kernel), and checked against measured one-thread runs on
// a loaded 2-core Zen 3 VM (results/cost_model_ranking_cpu.md, seeds 1-3). The
// micro-kernel's, packing's, row copies' and streams' rates below are that reference
// machine's: a machine's HostPrices scale each by the speed-up measured there; the
// prices of steps, elements and row calls are HostPrices' own.
constexpr double kLoadsPerCycle = 2;        // vector loads (and broadcasts) per cycle
// FMA instructions per cycle of the AVX2 4 x 16 micro-kernel, measured alone (bench/
// runtime_steps_bench's kernel family; results/runtime_steps.md): about one, not the two
// pipes' nominal two (HostModel::fma_per_cycle_) that the AVX-512 kernel is given.
constexpr double kAvx2FmaPerCycle = 1;
// A register block's call, zeroing and spill to a buffer, and per row the loop adding it
// into C: 40 cycles for AVX2's 4 x 16 block with its C traffic (measured 23-61, the
// kernel and cube families of runtime_steps_bench).
constexpr double kBlockCycles = 8;
constexpr double kBlockRowCycles = 4;
// Packing GM -> A panels (8 x 8 transposes) and B panels (row copies), bytes per cycle.
// The pack loop alone (bench/runtime_steps_bench's pack family) runs A at ~9 and B at
// ~3.6 B/cycle, as fast from a 4 MiB operand as from one inside the core's L2. Inside a
// matmul, between the kernel's runs, it is slower, and slower for an operand past L2:
// on a skinny matmul, re-packing 8 MiB of an L2-resident A ran 8 % faster than
// re-packing 8 MiB of B from the LLC (results/cost_model_ranking_cpu.md, seed 14). No
// clean measurement pins the in-matmul rates down (a fit over matmuls that re-pack
// 1-32 MiB swung with the noise, even in sign); these were chosen on the saved samples.
constexpr double kPackABytesPerCycle = 3.3;
constexpr double kPackBBytesPerCycle = 3.7;
constexpr double kPackPastL2BytesPerCycle = 2.5;
// Past a core's LLC share packing streams from DRAM: the pack loop alone took 0.21-0.46
// cycles a byte more at a 16 MiB operand than at 4 MiB (two runs), three quarters of
// the operand past the share: 0.28-0.61 a byte missed.
constexpr double kDramPackCyclesPerByte = 0.45;
// Vector TLOAD rows, with conversion, from L2 or the LLC alike: the copy loop, not the
// cache, sets the pace (a separate 1 B/cycle LLC rate priced unfused partitions' reads
// of their intermediates ~3x too high against measured runs).
constexpr double kRowCopyBytesPerCycle = 4;
constexpr double kStoreBytesPerCycle = 16;  // L0C / UB -> GM
constexpr double kLlcStoreBytesPerCycle = 3; // UB -> GM beyond L2: write-allocate and evictions
// Steps. The runtime decodes a block once and drops its SET_FLAG / WAIT_FLAG; what
// runs is a loop over the other steps: TMATMULs, TLOADs and TSTOREs, vector
// instructions, each at its price (HostPrices: tmatmul_step, instr). A cube store's row
// copies (copy.cpp) cost a call each, priced as the AVX2 machine's row-loop call: the
// row family measured vector row loops, not these.
constexpr double kRowCopyCallCycles = 30;
constexpr double kL1dBytesPerCycle = 128;   // two vector loads per cycle
constexpr double kL2BytesPerCycle = 32;     // the core's L2 -> L1d
// The shared last-level cache -> L1d, and (below) DRAM past a core's share of the
// LLC: the rates at which a fused rmsnorm's passes, at the element fit's half cycle,
// cost what the stream family measured with the program alone (1.7 ns an element to
// a 2 MiB UB footprint, 2.2 at 4 MiB, 3.2 at 8 MiB, 3.9 at 16 MiB; results/
// runtime_steps.md, Streams).
constexpr double kLlcBytesPerCycle = 24;
// A core's share of the last-level cache. The LLC is shared with cores this machine
// may not see (a VM's neighbours; eight Zen 3 cores share a 32 MiB L3): measured, a
// fused rmsnorm pass streams as fast at a 2 MiB UB footprint as at 36 KiB and slows
// from 4 MiB on (bench/runtime_steps_bench, stream family).
constexpr int64_t kLlcShareBytes = int64_t{4} << 20;
// Beyond it, ~17 GB/s, one thread reading and writing, or the target's per-core DRAM
// share where that is lower.
constexpr double kDramStreamBytesPerCycle = 7;
// A vector pass moves two 4-byte operands in and one out, the write's line fetched
// first (write-allocate).
constexpr double kPassBytesPerElement = 16;

// The fraction of a working set of `bytes` that a level of `capacity` cannot hold.
double missed_fraction(int64_t capacity, double bytes) {
  return std::max(0.0, 1.0 - static_cast<double>(capacity) / std::max(1.0, bytes));
}

}  // namespace

bool is_host_target(const Target& target) { return target.kind == TargetKind::Cpu; }

// Bytes of one element of the kernel's Cube inputs.
double HostModel::input_bytes(const KernelSummary& k) const {
  for (NodeId n : k.nodes) {
    const Node& node = graph_.node(n);
    if (node.kind == OpKind::Matmul) return dtype_size(graph_.node(node.inputs[0]).dtype);
  }
  return 4;
}

// One kernel's work, summed over its tasks (cycles), by Breakdown part.
struct HostModel::Work {
  int64_t tasks = 0;
  TimeTerms cube, cube_floor, vector, onchip, spill, pack, cold, instr;
};

HostModel::HostModel(const TensorGraph& graph, const Target& target, const HostPrices& prices)
    : graph_(graph), target_(target), prices_(prices) {
  if (target.simd_bytes == 64) return;  // AVX-512: 8 x 48 (core/runtime/microkernel.h)
  narrow_tail_blocks_ = false;
  block_cols_ = 16;
  if (target.simd_bytes == 32) {  // AVX2: 4 x 16; else the portable 8 x 16
    block_rows_ = 4;
    fma_per_cycle_ = kAvx2FmaPerCycle;
  }
}

HostModel::HostModel(const TensorGraph& graph, const Target& target)
    : HostModel(graph, target, default_host_prices(target)) {}

double HostModel::tmatmul_fma_cycles(int64_t m, int64_t n, int64_t k) const {
  const int64_t lanes = std::max(1, target_.simd_bytes / 4);
  double per_step = 0;  // cycles of one k step over the whole [m, n] block grid
  for (int64_t col = 0; col < n; col += block_cols_) {
    // AVX-512 picks a 1-, 2- or 3-vector block for the columns left; the AVX2 and
    // portable blocks always run their full width, zero lanes included.
    const int64_t cols = narrow_tail_blocks_ ? std::min<int64_t>(block_cols_, n - col) : block_cols_;
    const double vectors = static_cast<double>(ceil_div(cols, lanes));
    const double fma = block_rows_ * vectors / fma_per_cycle_;
    const double loads = (vectors + block_rows_) / kLoadsPerCycle;
    per_step += std::max(fma, loads);
  }
  return static_cast<double>(ceil_div(m, block_rows_)) * per_step * static_cast<double>(k) / prices_.kernel_speedup;
}

int64_t HostModel::tmatmul_blocks(int64_t m, int64_t n) const {
  return ceil_div(m, block_rows_) * ceil_div(n, block_cols_);
}

int64_t HostModel::llc_share_bytes() const {
  return std::min(kLlcShareBytes, target_.l2_bytes / std::max(1, target_.aic_cores));
}

// Cycles per byte a core streams a working set of this size at. A pass over a set that
// overflows a level by a fraction f still finds about 1 - f of it there, so each level
// adds its next level's extra cost per byte times the fraction it misses: graded, not a
// cliff at the capacity (a tile just past L2 ran as fast as one inside it, measured).
double HostModel::stream_cycles_per_byte(int64_t working_set) const {
  const double ws = static_cast<double>(working_set);
  const double dram = std::min(kDramStreamBytesPerCycle, target_.gm_read_bpc);
  const std::pair<int64_t, double> levels[] = {  // capacity, and the next level's rate
      {target_.ub, kL2BytesPerCycle}, {target_.l1, kLlcBytesPerCycle}, {llc_share_bytes(), dram}};
  double rate = kL1dBytesPerCycle;  // UB ~ L1d, L1 ~ the core's L2, L2 ~ the LLC
  double cycles = 1.0 / rate;
  for (const auto& [capacity, next] : levels) {
    cycles += missed_fraction(capacity, ws) * (1.0 / next - 1.0 / rate);
    rate = next;
  }
  return cycles / prices_.stream_speedup;
}

double HostModel::vector_cycles_per_element(OpKind op, DType dtype) const {
  switch (op) {
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Tanh: return prices_.fp64_math;
    case OpKind::Erf:
    case OpKind::Erfc: return prices_.erf;
    default: return 1.0 / std::max(1, target_.vector_cost(op_kind_name(op), dtype).parallelism);
  }
}

// Each run of a row-by-row copy between GM and a local buffer starts a stream the
// prefetchers have not seen and waits about an L2 hit for it, wherever the operand lives
// (the prefetchers stream the rest of the run; a DRAM-latency wait per run overpriced
// narrow tiles threefold against measured runs).
TimeTerms HostModel::run_starts(const Coefficients& c, double runs) const {
  return TimeTerms::term(c, Coef::Latency, runs * target_.l1_copy_latency);
}

void HostModel::cube_work(const KernelSummary& k, const TileConfig& config, const Coefficients& c,
                          Work& w) const {
  const size_t r = k.tile.size();
  const int64_t mL1 = k.tile[r - 2], nL1 = k.tile[r - 1];
  CubeTile t;
  if (config.cube) {
    t = *config.cube;
  } else {  // no tile given: the summary's L1 tile, whole
    t.mL0 = t.mL1 = mL1;
    t.nL0 = t.nL1 = nL1;
    t.kL0 = t.kAL1 = t.kBL1 = 64;
  }
  const int nbuffer = k.nbuffer;
  const double tmatmuls = static_cast<double>(k.tmatmuls);
  // Ragged tails run smaller TMATMULs: scale full ones by the fractals actually issued.
  const double full_fractals = static_cast<double>(ceil_div(t.mL0, 16) * ceil_div(t.nL0, 16) * ceil_div(t.kL0, 16));
  const double fill = tmatmuls > 0 ? std::min(1.0, static_cast<double>(k.fractals) / (tmatmuls * full_fractals)) : 0;
  const double blocks = tmatmuls * static_cast<double>(tmatmul_blocks(t.mL0, t.nL0)) * fill;
  w.cube += TimeTerms::term(c, Coef::Cube, tmatmuls * fill * tmatmul_fma_cycles(t.mL0, t.nL0, t.kL0));

  // C accumulators: each block reads and writes its rows x cols once per TMATMUL, about
  // a SIMD vector's bytes either way per cycle.
  const double c_block_bytes = 2.0 * block_rows_ * block_cols_ * 4;
  const int64_t c_tile = mL1 * nL1 * 4;
  const double block_cycles = kBlockCycles + block_rows_ * kBlockRowCycles + c_block_bytes / std::max(16, target_.simd_bytes);
  w.onchip += TimeTerms::term(c, Coef::OnChip, blocks * block_cycles);
  if (c_tile > target_.ub) {
    w.spill += TimeTerms::term(c, Coef::Spill, blocks * c_block_bytes * stream_cycles_per_byte(c_tile));
  }
  // L0 operands streamed by the micro-kernel: A once per column block, B once per
  // TMATMUL (its 48-column block stays in L1d over the row blocks).
  const int64_t l1_set = nbuffer * (mL1 * t.kAL1 + t.kBL1 * nL1) * 4 + c_tile;
  if (l1_set > target_.ub) {
    const double per_tmatmul = static_cast<double>(t.mL0 * t.kL0 * 4 * ceil_div(t.nL0, block_cols_) +
                                                   t.kL0 * t.nL0 * 4);
    w.cube_floor += TimeTerms::term(c, Coef::Spill, tmatmuls * fill * per_tmatmul * stream_cycles_per_byte(l1_set));
  }

  // Packing: each TLOAD reads its operand window from GM into panels, row by row of the
  // row-major operand: kAL1-long runs of A, nL1-long runs of B. Each run starts a new
  // stream the prefetcher has not seen. An operand past L2 packs slower, and the part of
  // it past the LLC share comes from DRAM.
  for (const TensorRead& read : k.reads) {
    const bool is_a = read.tensor == k.cube_a;
    if (!is_a && read.tensor != k.cube_b) continue;
    const double missed = missed_fraction(llc_share_bytes(), read.distinct_bytes);
    const bool in_l2 = read.distinct_bytes <= static_cast<double>(target_.l1);
    const double rate = prices_.pack_speedup * (!in_l2 ? kPackPastL2BytesPerCycle : is_a ? kPackABytesPerCycle : kPackBBytesPerCycle);
    w.pack += TimeTerms::term(c, Coef::L2, read.bytes * (1.0 / rate + missed * kDramPackCyclesPerByte));
    w.pack += run_starts(c, read.bytes / (static_cast<double>(is_a ? t.kAL1 : nL1) * input_bytes(k)));
  }
  const double split_k_reads = k.atomic_split_k ? k.l0c_out_bytes : 0;  // atomic adds read back
  w.onchip += TimeTerms::term(c, Coef::OnChip, (k.l0c_out_bytes + split_k_reads) / (kStoreBytesPerCycle * prices_.copy_speedup));
  // The store copies the C tile row by row (core/runtime/copy.cpp): one row-copy call per
  // row of nL1 floats, unless the tile spans whole rows of C and the rows merge into one.
  const int64_t n = k.iteration[r - 1];
  if (nL1 < n) w.onchip += TimeTerms::term(c, Coef::OnChip, k.l0c_out_bytes / (4.0 * static_cast<double>(nL1)) * kRowCopyCallCycles);
}

// Every vector instruction loops over the rows of its task's tile, one call per row (at
// most one per element: a row max or sum of 1-wide rows).
double HostModel::row_calls(const VectorWork& v, const KernelSummary& k) const {
  const size_t r = k.tile.size();
  const double rows = r > 0 && k.tile[r - 1] > 0 ? static_cast<double>(num_elements(k.tile) / k.tile[r - 1]) : 1;
  return std::min(static_cast<double>(v.elements), static_cast<double>(v.instrs) * rows);
}

// A tile narrower than the tensor's rows loads and stores each of its rows as a run of
// its own, a row pitch from the last (the next page, for rows of 1024 floats), where
// the prefetcher has not been: the same run start as a cube TLOAD's. A tile of whole
// rows moves one contiguous run. (Unfused gelu of 16-wide tiles ran twice as long as of
// whole rows, measured: results/cost_model_ranking_cpu.md.)
double HostModel::row_runs(const KernelSummary& k) const {
  const size_t r = k.tile.size();
  if (k.uses_cube || r == 0 || k.tile[r - 1] >= k.iteration[r - 1]) return 0;
  double gm_bytes = k.gm_write_bytes;
  for (const TensorRead& read : k.reads) gm_bytes += read.bytes;
  // A kernel of the compiler's own (split-K's zeroing) has no node: it writes every
  // element of its iteration space once, which gives its element size.
  const double element_bytes = k.nodes.empty() ? k.gm_write_bytes / static_cast<double>(num_elements(k.iteration))
                                               : static_cast<double>(dtype_size(graph_.node(k.nodes.back()).dtype));
  return gm_bytes / (static_cast<double>(k.tile[r - 1]) * element_bytes);
}

void HostModel::vector_work(const KernelSummary& k, const Coefficients& c, Work& w) const {
  // What the passes stream is what they address: a loaded value's further slots
  // (nbuffer > 1) size UB but no instruction touches them (measured: layernorm in
  // 512-row tiles ran as fast with two slots as with one, though its footprint crossed
  // the LLC share).
  const int64_t ub = k.ub_addressed_bytes;
  // A pass over a tile that overflows L1d streams it from where it lives while the loop
  // computes; the prefetchers overlap the two, so the pass pays only what the stream
  // takes beyond its compute (from L2 and the LLC share, nothing: measured, the same
  // time per element from 36 KiB to 2 MiB of UB).
  const double stream_per_element = ub > target_.ub ? kPassBytesPerElement * stream_cycles_per_byte(ub) : 0;
  for (const VectorWork& v : k.vector_work) {
    const double e = static_cast<double>(v.elements);
    const double compute = prices_.pass + vector_cycles_per_element(v.op, v.dtype);
    w.vector += TimeTerms::term(c, Coef::Vector, e * compute);
    w.spill += TimeTerms::term(c, Coef::Spill, e * std::max(0.0, stream_per_element - compute));
    w.instr += TimeTerms::term(c, Coef::Instr, row_calls(v, k) * prices_.row_call);
  }
  if (!k.uses_cube) {  // row loads and stores
    for (const TensorRead& read : k.reads) w.pack += TimeTerms::term(c, Coef::L2, read.bytes / (kRowCopyBytesPerCycle * prices_.copy_speedup));
    w.pack += run_starts(c, row_runs(k));
    const bool out_in_l2 = k.gm_write_bytes <= static_cast<double>(target_.l1);
    w.onchip += TimeTerms::term(c, Coef::OnChip, k.gm_write_bytes / ((out_in_l2 ? kStoreBytesPerCycle : kLlcStoreBytesPerCycle) * prices_.copy_speedup));
  }
}

TimeTerms HostModel::kernel_time(const KernelSummary& k, const TileConfig& config, const Coefficients& c,
                                 KernelEstimate* detail) const {
  const Target& t = target_;
  Work w;
  w.tasks = std::max<int64_t>(1, k.aic_tasks + k.aiv_tasks);
  if (k.uses_cube) cube_work(k, config, c, w);
  vector_work(k, c, w);
  const Traffic traffic = kernel_traffic(k, config, t);
  w.cold += TimeTerms::term(c, Coef::Hbm, traffic.cold_bytes / t.gm_read_bpc);
  // Steps (see kRowCopyCallCycles): the cube tasks' TMATMULs and GM transfers, the vector
  // tasks' instructions with their flags.
  const double cube_steps = static_cast<double>(k.tmatmuls) * prices_.tmatmul_step +
                            static_cast<double>(k.aic_gm_loads + k.aic_gm_stores) * prices_.instr;
  const double vector_steps = static_cast<double>(k.instructions - k.aic_instructions) * prices_.instr;
  w.instr += TimeTerms::term(c, Coef::Instr, cube_steps + vector_steps);

  const int64_t threads = std::max<int64_t>(1, t.aic_cores);
  const int64_t waves = ceil_div(w.tasks, threads);
  const double share = static_cast<double>(waves) / static_cast<double>(w.tasks);
  const TimeTerms compute = max(w.cube, w.cube_floor);
  const TimeTerms thread =
      (compute + w.vector + w.onchip + w.spill + w.pack + w.cold + w.instr) * share;
  const TimeTerms task = TimeTerms::term(c, Coef::Task, static_cast<double>(waves));
  const double cycles_per_gbps_byte = t.clock_mhz / 1000.0;
  const TimeTerms dram = TimeTerms::term(c, Coef::Hbm, traffic.hbm_bytes * cycles_per_gbps_byte / t.hbm_gbps);
  const TimeTerms launch = TimeTerms::term(c, Coef::Launch, 1);
  const TimeTerms total = max(thread + task, dram) + launch;

  if (detail) {
    fill_kernel_header(*detail, k, traffic, w.tasks, threads, total.value());
    Breakdown& b = detail->breakdown;
    b.cube = compute.value() * share;
    b.vector = w.vector.value() * share;
    b.mte2_l2 = w.pack.value() * share;
    b.mte2_hbm = w.cold.value() * share;
    b.mte1 = w.spill.value() * share;
    b.fix = (k.uses_cube ? w.onchip.value() : 0) * share;
    b.mte3 = (k.uses_cube ? 0 : w.onchip.value()) * share;
    b.instr = w.instr.value() * share;
    b.task = task.value();
    b.launch = launch.value();
    b.hbm_roofline = dram.value();
  }
  return total;
}

}  // namespace pto
