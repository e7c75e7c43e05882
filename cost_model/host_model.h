// HostModel: the cost model's prices for a CPU target (`host`), where the program runs
// on the CPU runtime (core/runtime) — threads taking tasks, a register-blocked FMA
// micro-kernel, packing into panels, row loops for vector work — not on NPU pipes.
//
// Why separate: the NPU formula (cost_model/estimate.cpp) overlaps pipes, charges a GM
// latency per TLOAD and prices Cube work per fractal; on the CPU none of that holds: a
// thread packs, multiplies and stores in turn, prefetchers hide the latencies, and what
// matters is how the tiles fit the micro-kernel and the caches. Measured against the
// runtime, the NPU formula ranked host configs backwards (issue 13). The prices of the
// runtime's FMAs, steps, elements and row calls are the machine's (HostPrices: measured
// by `pto-tune calibrate`, else its ISA's reference machine's). The terms, per kernel
// (cycles, each `coefficient × amount` as everywhere in the model):
//
//   Cube tasks (summed over the kernel's tasks; core/runtime/microkernel.h):
//     cube    FMA cycles of the register blocks (rows x 48 columns on AVX-512): each
//             TMATMUL [mL0, kL0] x [kL0, nL0] runs mL0/rows x ceil(nL0/cols) blocks of kL0
//             steps; on AVX-512 a narrow block (the nL0 % cols tail) issues as many
//             loads per FMA and runs below peak; AVX2 and portable blocks run their full
//             16 columns whatever is left (zero lanes), so an edge block costs a whole one.
//     onchip  per block, the C accumulators' read-modify-write, and the L0C -> GM stores,
//             one row-copy call per C row when nL1 < N (the rows do not merge).
//     spill   the same C traffic again from L2 (or the LLC) when the [mL1, nL1] L0C tile
//             overflows L1d; and the L0 operands streamed from L2 / the LLC when the L1
//             working set (A, B panels x nbuffer, C) overflows L1d / L2, as a floor under
//             the FMA time (the prefetcher overlaps the two).
//     l2      packing: every TLOAD reads its operand from GM into panels — A once per
//             N tile, B once per M tile — at the packing rate (A transposes 8x8 blocks);
//     latency and per row of the operand it reads (kAL1 elements of A, nL1 of B), a
//             run start of about an L2 hit (the prefetchers stream the rest from
//             wherever the operand lives): narrow tiles of a wide operand pack slowly.
//     hbm     the loads that miss the LLC (cost_model/l2_traffic.h), at DRAM speed.
//   Vector tasks (core/runtime/vector_ops.h):
//     vector  elements x (a pass's load and store + the op's cycles per element: the
//             target's vector costs, but the runtime's fp64 expansions for exp, log, tanh
//             and erf / erfc, vec_math.cpp);
//     instr   one row-loop call per row of each instruction's tile: an instruction whose
//             last dim is 1 (a row max, a row sum) pays it per element;
//     spill   what a pass's stream (two operands in, one out with its write-allocate
//             read) takes beyond the pass's compute when the task's UB tile overflows
//             L1d: the prefetchers overlap the two, so nothing from L2 or the core's
//             share of the LLC, and DRAM's wait past that share;
//     l2, hbm its row loads (with conversion), onchip its stores;
//     latency a run start per tile row, as for packing, when the tile is narrower than
//             the tensor's rows (each row is then a run of its own, a row pitch away).
//   Both: instr per step the runtime runs — a TMATMUL with its two L0 views, a cube
//   TLOAD or TSTORE, a vector instruction (its task's flags standing in for the task's
//   set-up; the runtime drops flags) — and task per task a thread starts.
//   Threads: tasks are taken by free threads in order, so the busiest thread runs
//   waves = ceil(tasks / threads) average tasks. Kernel = max(busiest thread, DRAM
//   roofline) + launch (a parallel region).
// In the Breakdown (`pto-tune explain`), which keeps the NPU's pipe names: cube = FMA
// time (or its cache floor), vector, mte2_l2 = packing and row loads, mte2_hbm = LLC
// misses, mte1 = cache overflow, fix / mte3 = C traffic and stores, instr, task, launch,
// hbm_roofline = the DRAM floor.
#pragma once

#include "core/analyze.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "cost_model/coefficients.h"
#include "cost_model/estimate.h"
#include "cost_model/host_prices.h"
#include "cost_model/time_terms.h"

namespace pto {

// True for the targets the HostModel prices (Target::kind "cpu").
bool is_host_target(const Target& target);

class HostModel {
 public:
  // Graph and target are kept by reference, so a temporary would dangle (an ASan run
  // caught a test doing that). Prices: the machine's measured ones, else its ISA's
  // reference machine's (default_host_prices).
  HostModel(const TensorGraph& graph, const Target& target, const HostPrices& prices);
  HostModel(const TensorGraph& graph, const Target& target);
  HostModel(const TensorGraph& graph, Target&& target) = delete;
  HostModel(TensorGraph&& graph, const Target& target) = delete;

  // One kernel's time in cycles, its launch included. Fills `detail` (cycles; everything
  // but its bound) when given.
  TimeTerms kernel_time(const KernelSummary& k, const TileConfig& config, const Coefficients& c,
                        KernelEstimate* detail) const;

  // The pieces, for tests: FMA cycles of one [m, k] x [k, n] TMATMUL; C read-modify-write
  // blocks it runs.
  double tmatmul_fma_cycles(int64_t m, int64_t n, int64_t k) const;
  int64_t tmatmul_blocks(int64_t m, int64_t n) const;
  // A vector instruction's row-loop calls over the kernel's tasks; the separate GM runs
  // a vector kernel's row loads and stores make (0 for tiles of whole rows).
  double row_calls(const VectorWork& v, const KernelSummary& k) const;
  double row_runs(const KernelSummary& k) const;

 private:
  struct Work;
  void cube_work(const KernelSummary& k, const TileConfig& config, const Coefficients& c, Work& w) const;
  void vector_work(const KernelSummary& k, const Coefficients& c, Work& w) const;
  double vector_cycles_per_element(OpKind op, DType dtype) const;
  double stream_cycles_per_byte(int64_t working_set) const;
  int64_t llc_share_bytes() const;  // the last-level cache one core can count on
  TimeTerms run_starts(const Coefficients& c, double runs) const;
  double input_bytes(const KernelSummary& k) const;

  const TensorGraph& graph_;

  const Target& target_;
  HostPrices prices_;
  int block_rows_ = 8, block_cols_ = 48;  // the micro-kernel's register tile
  bool narrow_tail_blocks_ = true;        // AVX-512: the last column block runs only its vectors
  double fma_per_cycle_ = 2;              // the micro-kernel's FMAs per cycle: two pipes, nominal
};

}  // namespace pto
