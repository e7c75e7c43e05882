// The analytical cost model: predicted time of a (graph, TileConfig, target) from
// core's analyze() summary.
//
// Map for the reader
//   Entry points  CostModel::estimate (with breakdown), CostModel::score (times only),
//                 CostModel::terms (the prediction as a linear form, for calibration).
//   The work      Impl::kernel_time prices one fused kernel; Impl::core_time prices one
//                 core type's share of it; kernel_traffic (cost_model/l2_traffic.h) and
//                 Impl::split_work turn the summary's totals into bytes per path and
//                 per-pipe cycles; cost_model/pipe_overlap.h overlaps the pipes. The rest
//                 is bookkeeping for the breakdown.
//   Knobs         the Coefficients (cost_model/coefficients.h); the Target's rates; the
//                 config's l2_group (the rest, each kernel's n-buffer depth included, is
//                 already in the summary).
//
// The formula. Every term is `coefficient × amount` (cycles), combined by sums, maxima
// and positive scaling only, so the prediction is linear in the coefficients piece by
// piece and calibration can fit them in log space (cost_model/calibrate.cpp).
//
//   Per kernel, per core type (AIC: Cube kernels; AIV: vector kernels and the epilogue
//   of a fused Cube kernel), pipe work summed over the tasks:
//     MTE2  hbm · burst_m · cold_bytes / gm_read_bpc  +  l2 · burst_r · hit_bytes / l2_read_bpc  +  latency · loads · gm_read_latency
//           cold and hit bytes from the L2/HBM traffic model (cost_model/l2_traffic.h); burst_m,
//           burst_r, burst_w ≥ 1: the DMA's whole bursts on short rows (cost_model/dma_bursts.h)
//     MTE1  onchip · (L1→L0A bytes / l1_to_l0a_bpc + L1→L0B bytes / l1_to_l0b_bpc
//                     + 2 · TMATMULs · l1_to_l0_latency)
//     M     (cube + spill · overflow) · fractals · cycles per fractal
//           (1 on the NPU; 2·m·k·n / cpu_flops_per_cycle on the host)
//     V     (vector + spill · overflow) ·
//           Σ_ops instrs · latency + (repeats − instrs) · elements per 256 B / parallelism
//     FIX   onchip · burst_w · L0C-out bytes / min(l0c_to_ub_bpc, l2_write_bpc)  [+ l2 · the read half
//           of split-K's atomic adds]  +  latency · stores · gm_write_latency
//     MTE3  onchip · burst_w · UB→GM bytes / ub_to_gm_bpc  +  latency · stores · gm_write_latency
//   (Cube: each TLOAD/TSTORE holds its pipe for the GM latency, as in PyPTO's cycle model;
//   the summary counts them per core type. Vector tasks issue their loads, and their
//   stores, back to back, each latency hiding behind the transfer before it, as the
//   simulator's DMA pipes do: one read and one write latency per task. A split reduction's
//   task streams its row in chunks, and each chunk's load waits for the flag after the one
//   before it, whatever its slots: a read latency per chunk.)
//   The busiest core runs waves = ceil(tasks / cores) tasks, the average task each time:
//   P_pipe = waves · work_pipe / tasks.
//   Overlap: Cube, nbuffer = 1: busy = Σ P (each task loads, computes, stores in turn).
//     Vector, nbuffer = 1: the next task's loads wait for the compute that frees their
//       buffers, but run beside the previous task's store where no stored value shares
//       UB bytes with a loaded one (else Σ P, as Cube):
//       busy = P_compute + max(P_load, P_store) + min(P_load, P_store) / waves.
//     Cube, nbuffer ≥ 2: busy = max_pipe P + (Σ P − max P) / steps   (fill and drain;
//       steps = waves · K steps per task).
//     Vector, nbuffer = n ≥ 2: a core holds n tasks, the next one's loads running while the
//       previous computes; stores and the compute that waits for them (one output buffer
//       slot) are one stage W; with W = P without the latencies and L = the latencies:
//       busy = max( max_pipe W + (Σ W − max W) / waves + L / waves,   (busiest pipe, one fill/drain)
//                   (Σ W + L) / n )                                    (n task chains side by side)
//   Core time = busy + task · waves + instr · waves · instructions per task.
//   Kernel: split cores (910B) run AIC and AIV concurrently, as a two-stage pipeline over
//   the AIC waves; a single pool (host) adds them. Then the shared-bandwidth roofline:
//     T_kernel = max(T_cores, hbm · HBM bytes / HBM bandwidth, l2 · GM traffic / L2 bandwidth)
//   HBM and L2 bytes: cost_model/l2_traffic.h.
//   Program:  T = Σ_kernels (launch + T_kernel)  — an unfused partition pays one more launch
//   and its intermediates' round trip (through L2 while they fit, else HBM); a fused one
//   keeps them on chip.
//   Soft capacities (hard_capacity false): overflow = Σ_levels max(0, 1 − capacity / footprint)
//   over L1/L0A/L0B/L0C (Cube) or UB (vector): the spilled fraction slows the compute pipe.
//   The CPU targets (kind "cpu") are priced by cost_model/host_model.h instead: the same
//   coefficients, the CPU runtime's terms.
//
// Simplification: the summary does not split GM reads between the AIC and AIV of a fused
// kernel, so epilogue operands other than the workspace are charged to the AIC's MTE2;
// totals and rooflines are exact.
#include "cost_model/estimate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "core/error.h"
#include "cost_model/dma_bursts.h"
#include "cost_model/host_model.h"
#include "cost_model/kernel_header.h"
#include "cost_model/l2_traffic.h"
#include "cost_model/pipe_overlap.h"

namespace pto {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kNumOpKinds = static_cast<int>(OpKind::Reshape) + 1;
constexpr int kNumDTypes = static_cast<int>(DType::Bool) + 1;
constexpr double kVectorRepeatBytes = 256;
// Below half the cores busy (averaged over its waves) a kernel is called imbalanced.
constexpr double kImbalancedIdleFraction = 0.5;

// One core type's share of a kernel: cycles per pipe part, summed over its tasks. MTE2
// is one pipe: its loads come from HBM or L2 and each waits a GM read latency. A core
// writes back through FIX (AIC) or MTE3 (AIV), each store waiting a GM write latency.
template <typename T>
struct CoreWork {
  int64_t tasks = 0;
  int64_t steps_per_task = 1;  // pipelined steps inside one task (Cube: K steps; split reductions: chunks)
  bool vector_tasks = false;   // AIV tasks: n-buffering overlaps whole tasks on a core
  bool loads_beside_stores = false;  // one slot: the next task's loads run beside the store
  bool l0_taking_turns = false;     // one L0 slot: MTE1 and the Cube are one stage
  std::array<T, kNumBreakdownFields> parts;  // by kBreakdownFields index; pipes only
  T& operator[](double Breakdown::*part) { return parts[breakdown_index(part)]; }
};

// How the busiest core of one type ran.
template <typename T>
struct CoreRun {
  T time;
  int64_t waves = 0;
  Breakdown busy;  // its pipe parts and overheads, in cycles
};

double overflow_fraction(int64_t footprint, int64_t capacity) {
  if (footprint <= capacity || footprint <= 0) return 0;
  return 1.0 - static_cast<double>(capacity) / static_cast<double>(footprint);
}

void require_positive(double value, const Target& t, const char* field) {
  if (!(value > 0)) {
    usage_error("target " + t.name + ": " + field + " must be positive for the cost model, got " +
                std::to_string(value));
  }
}

}  // namespace

struct CostModel::Impl {
  TensorGraph graph;
  Target target;
  Coefficients coefficients;
  Analyzer analyzer;
  double ns_per_cycle = 0;
  std::vector<double> cycles_per_fractal;  // by node id; 0 for nodes that are not matmuls
  double peak_cube_flops_per_cycle = 0;    // one AIC, for the machine balance
  std::array<std::array<double, kNumDTypes>, kNumOpKinds> vector_latency{};
  std::array<std::array<double, kNumDTypes>, kNumOpKinds> vector_cycles_per_repeat{};
  std::optional<HostModel> host;  // CPU targets: their own prices (cost_model/host_model.h)

  Impl(const TensorGraph& g, const Target& t, Coefficients c)
      : graph(g), target(t), coefficients(std::move(c)), analyzer(graph, target) {
    validate_target();
    ns_per_cycle = 1000.0 / target.clock_mhz;
    tabulate_cube();
    tabulate_vector();
    price_host();
  }

  // `other`'s target, coefficients and vector tables (the target's alone), for `g`.
  Impl(const TensorGraph& g, const Impl& other)
      : graph(g),
        target(other.target),
        coefficients(other.coefficients),
        analyzer(graph, target),
        ns_per_cycle(other.ns_per_cycle),
        vector_latency(other.vector_latency),
        vector_cycles_per_repeat(other.vector_cycles_per_repeat) {
    tabulate_cube();
    price_host();
  }

  // A host is priced at the coefficients' prices: the machine's, else its ISA's reference.
  void price_host() {
    if (is_host_target(target)) host.emplace(graph, target, coefficients.host_prices.value_or(default_host_prices(target)));
  }

  void validate_target() const {
    const Target& t = target;
    require_positive(t.clock_mhz, t, "clock_mhz");
    require_positive(t.aic_cores, t, "aic_cores");
    require_positive(t.split_cores ? t.aiv_cores : t.aic_cores, t, "aiv_cores");
    require_positive(t.gm_read_bpc, t, "gm_read_bpc");
    require_positive(t.l2_read_bpc, t, "l2_read_bpc");
    require_positive(t.l2_write_bpc, t, "l2_write_bpc");
    require_positive(t.l1_to_l0a_bpc, t, "l1_to_l0a_bpc");
    require_positive(t.l1_to_l0b_bpc, t, "l1_to_l0b_bpc");
    require_positive(t.l0c_to_ub_bpc, t, "l0c_to_ub_bpc");
    require_positive(t.ub_to_gm_bpc, t, "ub_to_gm_bpc");
    require_positive(t.hbm_gbps, t, "hbm_gbps");
    require_positive(t.l2_gbps, t, "l2_gbps");
  }

  // Cycles one fractal MAC takes: one on the NPU's Cube; on the host the fractal's flops
  // at the FMA throughput. flash_attention's matmuls run on the Cube too.
  void tabulate_cube() {
    cycles_per_fractal.assign(graph.nodes().size(), 0.0);
    for (const Node& n : graph.nodes()) {
      if (n.kind != OpKind::Matmul && n.kind != OpKind::FlashAttention) continue;
      const double fractal_flops = target.cube_flops_per_cycle(graph.node(n.inputs[0]).dtype);
      const double peak =
          target.cpu_flops_per_cycle > 0 ? target.cpu_flops_per_cycle : fractal_flops;
      cycles_per_fractal[n.id] = fractal_flops / peak;
      peak_cube_flops_per_cycle = std::max(peak_cube_flops_per_cycle, peak);
    }
  }

  void tabulate_vector() {
    for (int op = 0; op < kNumOpKinds; ++op) {
      for (int dt = 0; dt < kNumDTypes; ++dt) {
        const auto dtype = static_cast<DType>(dt);
        const VectorCost cost = target.vector_cost(op_kind_name(static_cast<OpKind>(op)), dtype);
        const double elems_per_repeat = kVectorRepeatBytes / dtype_size(dtype);
        vector_latency[op][dt] = cost.latency;
        vector_cycles_per_repeat[op][dt] = elems_per_repeat / std::max(cost.parallelism, 1);
      }
    }
  }

  double vector_cycles(const KernelSummary& k) const {
    double cycles = 0;
    for (const VectorWork& w : k.vector_work) {
      const int op = static_cast<int>(w.op), dt = static_cast<int>(w.dtype);
      cycles += w.instrs * vector_latency[op][dt] +
                (w.repeats - w.instrs) * vector_cycles_per_repeat[op][dt];
    }
    return cycles;
  }

  // Every TMATMUL has its A and its B moved L1 -> L0 once, and each move pays the MTE1
  // latency (the simulator's l1_to_l0_latency; load_data_perf measures 28 cycles on A2/A3).
  static double mte1_move_latency_cycles(const KernelSummary& k, const Target& t) {
    return 2.0 * static_cast<double>(k.tmatmuls) * t.l1_to_l0_latency;
  }

  double kernel_cycles_per_fractal(const KernelSummary& k) const {
    for (NodeId n : k.nodes) {
      if (cycles_per_fractal[n] > 0) return cycles_per_fractal[n];
    }
    internal_error("cube kernel " + std::to_string(k.kernel) + " has no matmul node");
  }

  // Spilled fraction of the levels a core type computes from (soft capacities only).
  double overflow(const KernelSummary& k, bool cube) const {
    if (target.hard_capacity) return 0;
    double sum = 0;
    for (const auto& [level, bytes] : k.footprint) {
      switch (level) {
        case MemLevel::L1: if (cube) sum += overflow_fraction(bytes, target.l1); break;
        case MemLevel::L0A: if (cube) sum += overflow_fraction(bytes, target.l0a); break;
        case MemLevel::L0B: if (cube) sum += overflow_fraction(bytes, target.l0b); break;
        case MemLevel::L0C: if (cube) sum += overflow_fraction(bytes, target.l0c); break;
        case MemLevel::UB: if (!cube) sum += overflow_fraction(bytes, target.ub); break;
        case MemLevel::GM:
        case MemLevel::WS: break;
      }
    }
    return sum;
  }

  // The summary's totals as per-core-type pipe work.
  template <typename T>
  void split_work(const KernelSummary& k, const Traffic& traffic, const BurstFactors& bursts,
                  const Coefficients& c, CoreWork<T>& aic, CoreWork<T>& aiv) const {
    const Target& t = target;
    const double vector = vector_cycles(k);
    aiv.tasks = k.aiv_tasks;
    // A split reduction pipelines its chunks inside a task, as a Cube task its K steps;
    // other vector tasks overlap one another.
    const bool streamed = k.stream_chunks > 0;
    aiv.vector_tasks = !streamed;
    aiv.steps_per_task = streamed ? k.stream_chunks * k.stream_passes : 1;
    aiv.loads_beside_stores = k.loads_clear_of_stores && !streamed;
    aiv[&Breakdown::vector] = T::term(c, Coef::Vector, vector) +
                         T::term(c, Coef::Spill, vector * overflow(k, false));
    // A vector task issues its loads back to back (and its stores): one latency each way.
    // A streamed task waits a read latency per chunk, whatever its slots: each chunk's
    // load is followed by the flag that hands it to the vector unit, which the MTE2 pipe
    // sets only once the load is done (as the simulator's in-order pipes do), so the
    // next chunk's load starts a latency later.
    const int64_t exposed_reads = streamed ? k.aiv_tasks * aiv.steps_per_task : std::min(k.aiv_gm_loads, k.aiv_tasks);
    aiv[&Breakdown::read_latency] = T::term(c, Coef::Latency, exposed_reads * t.gm_read_latency);
    aiv[&Breakdown::write_latency] =
        T::term(c, Coef::Latency, std::min(k.aiv_gm_stores, k.aiv_tasks) * t.gm_write_latency);
    const double cold = traffic.cold_bytes, hit_bytes = traffic.operand_bytes - traffic.cold_bytes;
    if (!k.uses_cube) {
      aiv[&Breakdown::mte2_hbm] = T::term(c, Coef::Hbm, bursts.read_miss * cold / t.gm_read_bpc);
      aiv[&Breakdown::mte2_l2] = T::term(c, Coef::L2, bursts.read * hit_bytes / t.l2_read_bpc);
      aiv[&Breakdown::mte3] = T::term(c, Coef::OnChip, bursts.write * k.gm_write_bytes / t.ub_to_gm_bpc);
      return;
    }
    aiv[&Breakdown::mte2_l2] = T::term(c, Coef::L2, traffic.workspace_half / t.l2_read_bpc);
    if (k.aiv_tasks > 0) {
      aiv[&Breakdown::mte3] = T::term(
          c, Coef::OnChip, std::max(0.0, k.gm_write_bytes - traffic.workspace_half) / t.ub_to_gm_bpc);
    }
    const double cube_cycles = k.fractals * kernel_cycles_per_fractal(k);
    aic.tasks = k.aic_tasks;
    aic.steps_per_task = std::max<int64_t>(k.k_steps, 1);
    aic.l0_taking_turns = k.l0_slots < 2;
    aic[&Breakdown::mte2_hbm] = T::term(c, Coef::Hbm, bursts.read_miss * cold / t.gm_read_bpc);
    aic[&Breakdown::mte2_l2] = T::term(c, Coef::L2, bursts.read * hit_bytes / t.l2_read_bpc);
    aic[&Breakdown::read_latency] = T::term(c, Coef::Latency, k.aic_load_groups * t.gm_read_latency);
    aic[&Breakdown::write_latency] = T::term(c, Coef::Latency, k.aic_gm_stores * t.gm_write_latency);
    aic[&Breakdown::mte1] = T::term(c, Coef::OnChip,
                                            k.l1_to_l0a_bytes / t.l1_to_l0a_bpc + k.l1_to_l0b_bytes / t.l1_to_l0b_bpc +
                                                mte1_move_latency_cycles(k, t));
    aic[&Breakdown::cube] = T::term(c, Coef::Cube, cube_cycles) +
                       T::term(c, Coef::Spill, cube_cycles * overflow(k, true));
    aic[&Breakdown::fix] = T::term(
        c, Coef::OnChip, bursts.write * k.l0c_out_bytes / std::min(t.l0c_to_ub_bpc, t.l2_write_bpc));
    if (k.atomic_split_k) {  // an atomic add reads the partial sum back before writing it
      aic[&Breakdown::fix] += T::term(c, Coef::L2, k.l0c_out_bytes / t.l2_read_bpc);
    }
  }

  template <typename T>
  CoreRun<T> core_time(const CoreWork<T>& w, int64_t cores, int nbuffer, double instrs_per_task,
                       const Coefficients& c) const {
    CoreRun<T> run;
    run.waves = ceil_div(w.tasks, cores);
    const double share = static_cast<double>(run.waves) / static_cast<double>(w.tasks);
    CoreWork<T> busiest;
    for (int p = 0; p < kNumBreakdownFields; ++p) {
      if (kBreakdownFields[p].kind != BreakdownKind::Pipe) continue;
      busiest.parts[p] = w.parts[p] * share;
      run.busy.*kBreakdownFields[p].member = busiest.parts[p].value();
    }
    // A core type writes back through either FIX (AIC) or MTE3 (AIV): one pipe.
    const std::array<T, 5> work = {busiest[&Breakdown::mte2_hbm] + busiest[&Breakdown::mte2_l2], busiest[&Breakdown::mte1],
                                           busiest[&Breakdown::cube], busiest[&Breakdown::vector], busiest[&Breakdown::fix] + busiest[&Breakdown::mte3]};
    if (nbuffer >= 2 && w.vector_tasks) {
      // Only loads get n buffer slots: a task's compute waits for the store of the one
      // before it (it writes the same output buffer), so compute and store are one stage.
      const std::array<T, 4> stages = {work[0], work[1], work[2], work[3] + work[4]};
      run.time = tasks_in_flight(stages, busiest[&Breakdown::read_latency] + busiest[&Breakdown::write_latency],
                                 static_cast<double>(run.waves), nbuffer);
    } else if (w.loads_beside_stores) {
      const std::array<T, 2> transfers = {work.front() + busiest[&Breakdown::read_latency],
                                                  work.back() + busiest[&Breakdown::write_latency]};
      run.time = work[1] + work[2] + work[3] + overlapped(transfers, static_cast<double>(run.waves));
    } else {
      std::array<T, 5> pipes = work;  // each transfer holds its pipe for the GM latency
      pipes.front() += busiest[&Breakdown::read_latency];
      pipes.back() += busiest[&Breakdown::write_latency];
      if (nbuffer >= 2) {
        if (w.l0_taking_turns) {
          pipes[2] += pipes[1];
          pipes[1] = T();
        }
        run.time = overlapped(pipes, static_cast<double>(run.waves * w.steps_per_task));
      } else {
        for (const T& p : pipes) run.time += p;
      }
    }
    const T task = T::term(c, Coef::Task, run.waves);
    const T instr = T::term(c, Coef::Instr, run.waves * instrs_per_task);
    run.time += task + instr;
    run.busy.task = task.value();
    run.busy.instr = instr.value();
    return run;
  }

  // The row slices a vector unit cuts a block's softmax (v1) or update (v2) into.
  static double unit_slices(const KernelSummary& k, double units, bool softmax) {
    const AttentionKernelTiles& a = *k.attention;
    return std::ceil(std::ceil(static_cast<double>(a.q_tile) / units) /
                     static_cast<double>(softmax ? a.v1_rows : a.v2_rows));
  }

  // The steady state's floor with a QK preload of P blocks: block j's S crosses to the
  // vector units, its softmax runs, its P crosses back, and only then can the Cube's PV
  // of j start, P blocks after its QK; likewise its O_j's round trip through the
  // update. So P blocks take at least two hand-offs plus the stage in between (a
  // matmul, half the Cube's step, or the softmax, about half the vector's): with a
  // flag that takes thousands of cycles a shallow preload leaves the Cube waiting
  // however fast either stage is.
  template <typename T>
  static T fifo_round_trip(const T& cube_step, const T& vector_step, double handoff_latency, int64_t preload,
                           const Coefficients& c) {
    const T trip = T::term(c, Coef::Latency, 2.0 * handoff_latency) + max(cube_step, vector_step) * 0.5;
    return trip * (1.0 / static_cast<double>(std::max<int64_t>(preload, 1)));
  }

  // A MIX kernel (flash_attention): per KV block a Cube stage (K/V/P in, QK and PV on
  // the Cube, S and O_j out) and a vector stage (S and O_j in, the softmax and the update,
  // P out), each its pipes overlapped over its sub-steps where its buffers have two slots
  // (nbuffer >= 2); with a QK preload the two stages overlap block by block, the faster
  // one showing once per task (the pipeline's fill, after the chain of the first block's
  // hand-offs), else they alternate but for the loads that run under the other side's
  // work. The tasks go to
  // the clusters as the dispatcher sends them (analyze: the busiest cluster's blocks and
  // tasks), so that a causal kernel's order counts.
  template <typename T>
  T mix_kernel_time(const KernelSummary& k, const Coefficients& c, KernelEstimate* detail) const {
    const Target& t = target;
    const int pipe_mte2 = static_cast<int>(Pipe::MTE2), pipe_fix = static_cast<int>(Pipe::FIX);
    const int pipe_mte3 = static_cast<int>(Pipe::MTE3);
    const double steps = static_cast<double>(std::max<int64_t>(k.loop_steps, 1));
    const double units = t.split_cores ? t.vector_units() : 1;
    const bool direct = t.cv_direct || !t.split_cores;
    // K, V, Q and the scales: their first reads from HBM, re-reads (other row blocks, other
    // query heads of a group) from L2 while the working set fits.
    double distinct = 0;
    for (const TensorRead& r : k.reads) distinct += std::min(r.bytes, r.distinct_bytes > 0 ? r.distinct_bytes : r.bytes);
    const double cold = k.touched_bytes <= static_cast<double>(t.l2_bytes) ? distinct : k.gm_read_bytes;
    const double hit = std::max(0.0, k.gm_read_bytes - cold);
    const double handoff_rate = direct ? t.l0c_to_ub_bpc : std::min(t.l0c_to_ub_bpc, t.l2_write_bpc);
    const auto& hb = k.handoff_bytes;
    const auto& hm = k.handoff_moves;
    // Per block: the Cube unit's pipes, summed over the kernel then divided by the blocks.
    const double per = 1.0 / steps;
    const T c_mte2 = (T::term(c, Coef::Hbm, cold / t.gm_read_bpc) +
                              T::term(c, Coef::L2, hit / t.l2_read_bpc + hb[0][pipe_mte2] / t.l2_read_bpc) +
                              T::term(c, Coef::Latency, (k.aic_gm_loads + hm[0][pipe_mte2]) * t.gm_read_latency)) *
                             per;
    const T c_mte1 = T::term(c, Coef::OnChip, k.l1_to_l0a_bytes / t.l1_to_l0a_bpc +
                                                                  k.l1_to_l0b_bytes / t.l1_to_l0b_bpc +
                                                                  mte1_move_latency_cycles(k, t)) * per;
    const T c_m = T::term(c, Coef::Cube, static_cast<double>(k.fractals)) * per;  // a fractal MAC a cycle
    const T c_fix = (T::term(c, Coef::OnChip, hb[0][pipe_fix] / handoff_rate) +
                             T::term(c, Coef::Latency, (direct ? t.l1_copy_latency : t.gm_write_latency) *
                                                                   static_cast<double>(hm[0][pipe_fix]))) * per;
    // The vector units split a block's rows: each does 1/units of the work.
    const double per_unit = per / units;
    const T v_mte2 = (T::term(c, Coef::L2, hb[1][pipe_mte2] / t.l2_read_bpc) +
                              T::term(c, Coef::Latency, hm[1][pipe_mte2] * t.gm_read_latency)) * per_unit;
    const T v_v = T::term(c, Coef::Vector, vector_cycles(k)) * per_unit;
    const double p_rate = direct ? t.ub_to_l1_bpc : std::min(t.ub_to_gm_bpc, t.l2_write_bpc);
    const T v_mte3 = (T::term(c, Coef::OnChip, hb[1][pipe_mte3] / p_rate + k.gm_write_bytes / t.ub_to_gm_bpc) +
                              T::term(c, Coef::Latency, (direct ? 0.0 : hm[1][pipe_mte3] * t.gm_write_latency) +
                                                                    k.aiv_gm_stores * t.gm_write_latency)) * per_unit;
    const int nbuffer = k.nbuffer;
    const bool preloads = k.attention->preload >= 1;
    const double substeps = std::max(1.0, static_cast<double>(k.tmatmuls) * per);
    const std::array<T, 4> cube_pipes = {c_mte2, c_mte1, c_m, c_fix};
    const std::array<T, 3> vector_pipes = {v_mte2, v_v, v_mte3};
    T cube_step, vector_step;
    for (const T& p : cube_pipes) cube_step += p;
    for (const T& p : vector_pipes) vector_step += p;
    if (nbuffer >= 2) {
      cube_step = overlapped(cube_pipes, substeps);
      // With two UB slots each, the slices' loads, vector work and stores overlap.
      vector_step = overlapped(vector_pipes, std::max(2.0, unit_slices(k, units, true) + unit_slices(k, units, false)));
    }
    // One buffer: the stages alternate, but the Cube's loads of the next K and V blocks
    // run under the vector stage, and a vector unit's loads of its next slice under the
    // slice before (all but the first slice's).
    // Without a preload, each block also waits for two flags in turn, S's to the vector
    // units and P's back to the Cube (O_j's overlaps the next block's QK).
    const double v1_slices = unit_slices(k, units, true);
    const T alternating_flags = T::term(c, Coef::Latency, 2.0 * t.cross_core_sync_latency);
    // One hand-off across units: the data's move and the flag that tells the other unit.
    const double handoff_latency =
        (direct ? t.l1_copy_latency : t.gm_write_latency + t.gm_read_latency) + t.cross_core_sync_latency;
    const T block = preloads ? max(max(cube_step, vector_step), fifo_round_trip(cube_step, vector_step, handoff_latency,
                                                                                  k.attention->preload, c))
                             : max(max(cube_step, vector_step),
                                   cube_step - c_mte2 + vector_step - v_mte2 * (1.0 - 1.0 / v1_slices)) +
                                   alternating_flags;
    // A task's first block cannot overlap anything: Q's load, then S, P and O_j each
    // handed across once, and the output stored, one after another.
    const T chain = T::term(c, Coef::Latency, t.gm_read_latency + 3 * handoff_latency + t.gm_write_latency);
    const T fill = (preloads ? cube_step + vector_step - block : T{}) + chain;
    const double tasks = static_cast<double>(std::max<int64_t>(k.mix_tasks, 1));
    const double blocks_on_busiest = static_cast<double>(k.busiest_cluster_steps);
    const double tasks_on_busiest = static_cast<double>(std::max<int64_t>(k.busiest_cluster_tasks, 1));
    const T instr = T::term(c, Coef::Instr, static_cast<double>(k.instructions) / tasks * tasks_on_busiest / units);
    const T task = T::term(c, Coef::Task, tasks_on_busiest);
    const T cores = block * blocks_on_busiest + fill * tasks_on_busiest + task + instr;

    const double cycles_per_gbps_byte = t.clock_mhz / 1000.0;
    const double hbm_bytes = cold + k.gm_write_bytes;
    const double l2_bytes = k.gm_read_bytes + k.gm_write_bytes + (direct ? 0 : hb[0][pipe_fix] + hb[1][pipe_mte3]);
    const T hbm_roof = T::term(c, Coef::Hbm, hbm_bytes * cycles_per_gbps_byte / t.hbm_gbps);
    const T l2_roof = T::term(c, Coef::L2, l2_bytes * cycles_per_gbps_byte / t.l2_gbps);
    const T launch = T::term(c, Coef::Launch, 1);
    const T total = max(max(cores, hbm_roof), l2_roof) + launch;
    if (detail) {
      Traffic traffic;
      traffic.hit = k.gm_read_bytes > 0 ? hit / k.gm_read_bytes : 0;
      traffic.hbm_bytes = hbm_bytes;
      fill_kernel_header(*detail, k, traffic, k.mix_tasks, t.aic_cores, total.value());
      Breakdown& b = detail->breakdown;
      b.mte2_hbm = (T::term(c, Coef::Hbm, cold / t.gm_read_bpc) * per * blocks_on_busiest).value();
      b.mte2_l2 = (c_mte2 * blocks_on_busiest).value() - b.mte2_hbm;
      b.mte1 = (c_mte1 * blocks_on_busiest).value();
      b.cube = (c_m * blocks_on_busiest).value();
      b.fix = (c_fix * blocks_on_busiest).value();
      b.vector = (v_v * blocks_on_busiest).value();
      b.mte3 = ((v_mte3 + v_mte2) * blocks_on_busiest).value();
      b.task = task.value();
      b.instr = instr.value();
      b.launch = launch.value();
      b.hbm_roofline = hbm_roof.value();
      b.l2_roofline = l2_roof.value();
      detail->bound = kernel_bound(*detail);
    }
    return total;
  }

  // One kernel's time in cycles, its launch included; fills `detail` (in cycles) when given.
  template <typename T>
  T kernel_time(const KernelSummary& k, const TileConfig& config, const Coefficients& c,
                        KernelEstimate* detail) const {
    if (k.mix_tasks > 0 && !host) return mix_kernel_time<T>(k, c, detail);
    if (host) {
      const T total(host->kernel_time(k, config, c, detail));
      if (detail) detail->bound = kernel_bound(*detail);
      return total;
    }
    const Target& t = target;
    const Traffic traffic = kernel_traffic(k, config, target);
    CoreWork<T> aic, aiv;
    split_work(k, traffic, burst_factors(k, graph, config, t), c, aic, aiv);
    const int nbuffer = k.nbuffer;
    const int64_t all_tasks = k.aic_tasks + k.aiv_tasks;
    const double instrs_per_task = all_tasks > 0 ? static_cast<double>(k.instructions) / all_tasks : 0;
    const int64_t aiv_cores = t.split_cores ? t.aiv_cores : t.aic_cores;

    CoreRun<T> aic_run, aiv_run;
    if (aic.tasks > 0) aic_run = core_time(aic, t.aic_cores, nbuffer, instrs_per_task, c);
    if (aiv.tasks > 0) aiv_run = core_time(aiv, aiv_cores, nbuffer, instrs_per_task, c);
    T cores;
    if (t.split_cores && aic.tasks > 0 && aiv.tasks > 0) {
      const std::array<T, 2> stages = {aic_run.time, aiv_run.time};
      cores = overlapped(stages, static_cast<double>(aic_run.waves));
    } else {
      cores = aic_run.time + aiv_run.time;
    }

    const double cycles_per_gbps_byte = t.clock_mhz / 1000.0;  // cycles per byte at 1 GB/s
    const T hbm_roof = T::term(c, Coef::Hbm, traffic.hbm_bytes * cycles_per_gbps_byte / t.hbm_gbps);
    const T l2_roof = T::term(c, Coef::L2, traffic.l2_bytes * cycles_per_gbps_byte / t.l2_gbps);
    const T launch = T::term(c, Coef::Launch, 1);
    const T total = max(max(cores, hbm_roof), l2_roof) + launch;

    if (detail) {
      if (k.uses_cube) {
        fill_kernel_header(*detail, k, traffic, aic.tasks, t.aic_cores, total.value());
      } else {
        fill_kernel_header(*detail, k, traffic, aiv.tasks, aiv_cores, total.value());
      }
      Breakdown& b = detail->breakdown;
      for (const CoreRun<T>* run : {&aic_run, &aiv_run}) {
        for (const BreakdownField& f : kBreakdownFields) {
          if (f.kind != BreakdownKind::KernelWide) b.*f.member = std::max(b.*f.member, run->busy.*f.member);
        }
      }
      b.launch = launch.value();
      b.hbm_roofline = hbm_roof.value();
      b.l2_roofline = l2_roof.value();
      detail->bound = kernel_bound(*detail);
    }
    return total;
  }

  // The largest pipe or floor names the bound; a pipe mostly (more than half) waiting
  // on GM latency, or overheads larger than any pipe, make it launch/latency bound.
  static Bound kernel_bound(const KernelEstimate& k) {
    using Candidate = std::pair<Bound, double>;
    auto larger = [](const Candidate& a, const Candidate& b) { return a.second < b.second ? b : a; };
    const Breakdown& b = k.breakdown;
    const Bound mte2_bound = b.read_latency > b.mte2_hbm + b.mte2_l2
                                 ? Bound::LaunchLatency
                                 : larger({Bound::Hbm, b.mte2_hbm}, {Bound::L2, b.mte2_l2}).first;
    const Bound write_bound = b.write_latency > b.fix + b.mte3 ? Bound::LaunchLatency : Bound::OnChip;
    const std::array<Candidate, 8> candidates = {{
        {Bound::Cube, b.cube},
        {Bound::Vector, b.vector},
        {mte2_bound, b.mte2_hbm + b.mte2_l2 + b.read_latency},
        {Bound::Hbm, b.hbm_roofline},
        {Bound::L2, b.l2_roofline},
        {Bound::OnChip, b.mte1},
        {write_bound, b.fix + b.mte3 + b.write_latency},
        {Bound::LaunchLatency, b.launch + b.task + b.instr},
    }};
    Candidate top = candidates[0];
    for (const Candidate& c : candidates) top = larger(top, c);
    if (top.first != Bound::LaunchLatency && k.idle_fraction > kImbalancedIdleFraction) {
      return Bound::Imbalance;
    }
    return top.first;
  }

  // The whole program's time in cycles: as a linear form (TimeTerms) or its value (TimeValue).
  template <typename T>
  T program_time(const TilingSummary& s, const TileConfig& config, const Coefficients& c,
                 std::vector<KernelEstimate>* details) const {
    T total;
    if (details) details->resize(s.kernels.size());
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      total += kernel_time<T>(s.kernels[i], config, c, details ? &(*details)[i] : nullptr);
    }
    return total;
  }

  Estimate estimate(const TilingSummary& s, const TileConfig& config) const {
    Estimate e;
    e.feasible = s.feasible;
    e.violations = s.violations;
    if (!s.feasible) {
      e.predicted_ns = kInfinity;
      return e;
    }
    e.predicted_ns = program_time<TimeValue>(s, config, coefficients, &e.kernels).value() * ns_per_cycle;
    std::array<double, static_cast<int>(Bound::Imbalance) + 1> time_by_bound{};
    for (KernelEstimate& k : e.kernels) {
      to_ns(k);
      time_by_bound[static_cast<int>(k.bound)] += k.time_ns;
      e.breakdown += k.breakdown;
      e.mte2_bytes += k.mte2_bytes;
      e.hbm_bytes += k.hbm_bytes;
    }
    e.bound = static_cast<Bound>(std::max_element(time_by_bound.begin(), time_by_bound.end()) -
                                 time_by_bound.begin());
    for (const KernelSummary& k : s.kernels) e.useful_flops += k.useful_flops;
    if (e.useful_flops > 0) {
      if (e.mte2_bytes > 0) e.arithmetic_intensity = e.useful_flops / e.mte2_bytes;
      const double peak_flops_per_ns = peak_cube_flops_per_cycle * target.aic_cores / ns_per_cycle;
      e.machine_balance = peak_flops_per_ns / target.hbm_gbps;  // GB/s = bytes per ns
    }
    return e;
  }

  void to_ns(KernelEstimate& k) const {
    k.time_ns *= ns_per_cycle;
    Breakdown& b = k.breakdown;
    for (const BreakdownField& f : kBreakdownFields) b.*f.member *= ns_per_cycle;
  }

  double predict_ns(const TilingSummary& s, const TileConfig& config) const {
    if (!s.feasible) return kInfinity;
    return program_time<TimeValue>(s, config, coefficients, nullptr).value() * ns_per_cycle;
  }
};

CostModel::CostModel(const TensorGraph& graph, const Target& target)
    : CostModel(graph, target, Coefficients::defaults(target)) {}

CostModel::CostModel(const TensorGraph& graph, const Target& target, Coefficients coefficients)
    : impl_(std::make_unique<Impl>(graph, target, std::move(coefficients))) {}

CostModel CostModel::for_graph(const TensorGraph& graph) const {
  CostModel model;
  model.impl_ = std::make_unique<Impl>(graph, *impl_);
  return model;
}

CostModel::CostModel() = default;
CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

Estimate CostModel::estimate(const TileConfig& config) const {
  return impl_->estimate(impl_->analyzer.analyze(config), config);
}

Estimate CostModel::estimate(const TilingSummary& summary, const TileConfig& config) const {
  return impl_->estimate(summary, config);
}

double CostModel::predict_ns(const TileConfig& config) const {
  return impl_->predict_ns(impl_->analyzer.analyze(config), config);
}

double CostModel::predict_ns(const TilingSummary& summary, const TileConfig& config) const {
  return impl_->predict_ns(summary, config);
}

void CostModel::score(std::span<const TileConfig> configs, std::span<double> predicted_ns) const {
  if (configs.size() != predicted_ns.size()) {
    usage_error("CostModel::score: " + std::to_string(configs.size()) + " configs but " +
                std::to_string(predicted_ns.size()) + " result slots");
  }
  for (size_t i = 0; i < configs.size(); ++i) predicted_ns[i] = predict_ns(configs[i]);
}

TilingSummary CostModel::analyze(const TileConfig& config) const {
  return impl_->analyzer.analyze(config);
}

TimeTerms CostModel::terms(const TilingSummary& summary, const TileConfig& config,
                           const Coefficients& coefficients) const {
  if (!summary.feasible) usage_error("CostModel::terms: the config is infeasible");
  return impl_->program_time<TimeTerms>(summary, config, coefficients, nullptr) * impl_->ns_per_cycle;
}

const Coefficients& CostModel::coefficients() const { return impl_->coefficients; }
void CostModel::set_coefficients(Coefficients coefficients) {
  impl_->coefficients = std::move(coefficients);
  impl_->price_host();
}
const Target& CostModel::target() const { return impl_->target; }
const TensorGraph& CostModel::graph() const { return impl_->graph; }

}  // namespace pto
