// The analytical cost model: predicted time of a (graph, TileConfig, target) from
// core's analyze() summary.
//
// Map for the reader
//   Entry points  CostModel::estimate (with breakdown), CostModel::score (times only),
//                 CostModel::terms (the prediction as a linear form, for calibration).
//   The work      Impl::kernel_time prices one fused kernel; Impl::core_time prices one
//                 core type's share of it; Impl::traffic and Impl::split_work turn the
//                 summary's totals into bytes per path and per-pipe cycles. The rest is
//                 bookkeeping for the breakdown.
//   Knobs         the Coefficients (cost_model/coefficients.h); the Target's rates; the
//                 config's nbuffer and l2_group (the rest of the config is already in the
//                 summary).
//
// The formula. Every term is `coefficient × amount` (cycles), combined by sums, maxima
// and positive scaling only, so the prediction is linear in the coefficients piece by
// piece and calibration can fit them in log space (cost_model/calibrate.cpp).
//
//   Per kernel, per core type (AIC: Cube kernels; AIV: vector kernels and the epilogue
//   of a fused Cube kernel), pipe work summed over the tasks:
//     MTE2  hbm · cold_bytes / gm_read_bpc  +  l2 · hit_bytes / l2_read_bpc  +  latency · loads · gm_read_latency
//           L2 reuse from first touches and re-reads of each GM tensor the kernel reads
//           (the summary's `reads`): a tensor an earlier kernel left in L2 (it fits,
//           with what was touched since) always hits. Otherwise:
//           Cube operands, for the busiest core: its first-wave tile is cold (all cores
//             start together on cold panels and wait on the same HBM fill); a later tile
//             is cold in the waves that reach panels no earlier wave touched (their count:
//             the panels left after the first wave, as many per wave as the first wave
//             touched); other re-reads hit while the kernel's footprint fits in L2, else
//             the later waves hit at the PyPTO guide's steady-state ratio for the tiles
//             in flight in one wave, mDim×nDim (l2_group, else row-major order):
//               hit = 1 − (mL1/nDim + nL1/mDim) / (mL1 + nL1)
//           Other reads (vector kernels, epilogue operands): the first wave's cores wait
//             on the first fill (min(cores, re-reads) × distinct bytes), the rest hit;
//           the fused Cube→vector workspace always hits.
//     MTE1  onchip · (L1→L0A bytes / l1_to_l0a_bpc + L1→L0B bytes / l1_to_l0b_bpc
//                     + 2 · TMATMULs · l1_to_l0_latency)
//     M     (cube + spill · overflow) · fractals · cycles per fractal
//           (1 on the NPU; 2·m·k·n / cpu_flops_per_cycle on the host)
//     V     (vector + spill · overflow) ·
//           Σ_ops instrs · latency + (repeats − instrs) · elements per 256 B / parallelism
//     FIX   onchip · L0C-out bytes / min(l0c_to_ub_bpc, l2_write_bpc)  [+ l2 · the read half
//           of split-K's atomic adds]  +  latency · stores · gm_write_latency
//     MTE3  onchip · UB→GM bytes / ub_to_gm_bpc  +  latency · stores · gm_write_latency
//   (Cube: each TLOAD/TSTORE holds its pipe for the GM latency, as in PyPTO's cycle model;
//   the summary counts them per core type. Vector tasks issue their loads, and their
//   stores, back to back, each latency hiding behind the transfer before it, as the
//   simulator's DMA pipes do: one read and one write latency per task.)
//   The busiest core runs waves = ceil(tasks / cores) tasks, the average task each time:
//   P_pipe = waves · work_pipe / tasks.
//   Overlap: nbuffer = 1: busy = Σ P (each task loads, computes, stores in turn).
//     Cube, nbuffer ≥ 2: busy = max_pipe P + (Σ P − max P) / steps   (fill and drain;
//       steps = waves · K steps per task).
//     Vector, nbuffer = n ≥ 2: a core holds n tasks, the next one's loads running while the
//       previous computes; with W = P without the latencies and L = the latencies:
//       busy = max( max_pipe W + (Σ W − max W) / waves + L / waves,   (busiest pipe, one fill/drain)
//                   (Σ W + L) / n )                                    (n task chains side by side)
//   Core time = busy + task · waves + instr · waves · instructions per task.
//   Kernel: split cores (910B) run AIC and AIV concurrently, as a two-stage pipeline over
//   the AIC waves; a single pool (host) adds them. Then the shared-bandwidth roofline:
//     T_kernel = max(T_cores, hbm · HBM bytes / HBM bandwidth, l2 · GM traffic / L2 bandwidth)
//   HBM bytes: each tensor's first touch (its distinct bytes; a Cube operand of a kernel
//   that overflows L2: the first wave plus the steady-state misses), nothing for a tensor
//   left in L2, and writes beyond what the write-back L2 absorbs (its capacity); the fused
//   workspace stays in L2.
//   Program:  T = Σ_kernels (launch + T_kernel)  — an unfused partition pays one more launch
//   and its intermediates' round trip (through L2 while they fit, else HBM); a fused one
//   keeps them on chip.
//   Host targets (soft capacities): overflow = Σ_levels max(0, 1 − capacity / footprint) over
//   L1/L0A/L0B/L0C (Cube) or UB (vector): the spilled fraction slows the compute pipe.
//
// Simplification: the summary does not split GM reads between the AIC and AIV of a fused
// kernel, so epilogue operands other than the workspace are charged to the AIC's MTE2;
// totals and rooflines are exact.
#include "cost_model/estimate.h"

#include <algorithm>
#include <array>
#include <limits>

#include "core/error.h"

namespace pto {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kNumOpKinds = static_cast<int>(OpKind::Reshape) + 1;
constexpr int kNumDTypes = static_cast<int>(DType::Bool) + 1;
constexpr double kVectorRepeatBytes = 256;
// Below half the cores busy (averaged over its waves) a kernel is called imbalanced.
constexpr double kImbalancedIdleFraction = 0.5;

// The pieces of pipe work the model prices. MTE2 is one pipe: its loads come from HBM or
// L2 and each waits a GM read latency. A core writes back through FIX (AIC) or MTE3 (AIV),
// each store waiting a GM write latency.
enum Part {
  kMte2Hbm, kMte2L2, kReadLatency, kMte1, kCube, kVector, kFix, kMte3, kWriteLatency, kNumParts
};

// Where a kernel's GM bytes go.
struct Traffic {
  double workspace_half = 0;  // fused workspace: written by the AIC, read back by the AIV
  double operand_bytes = 0;   // GM loads other than the fused workspace
  double cold_bytes = 0;      // of those, loads that wait on an HBM fill
  double hit = 0;             // L2 hit ratio of the operand loads: 1 - cold / operand
  double hbm_bytes = 0;       // through HBM: read misses, writes the L2 cannot absorb
  double l2_bytes = 0;        // through L2: all GM traffic, split-K read-backs included
};

// One core type's share of a kernel: cycles per part, summed over its tasks.
struct CoreWork {
  int64_t tasks = 0;
  int64_t steps_per_task = 1;  // pipelined steps inside one task (Cube: K steps)
  bool vector_tasks = false;   // AIV tasks: n-buffering overlaps whole tasks on a core
  std::array<TimeTerms, kNumParts> parts;
};

// How the busiest core of one type ran.
struct CoreRun {
  TimeTerms time;
  int64_t waves = 0;
  double idle_fraction = 0;
  std::array<double, kNumParts> part_cycles{};
  double task = 0, instr = 0;
};

// Stages running concurrently over `steps` equal steps: the slowest stage bounds the
// steady state; the others add their share of one step (pipeline fill and drain).
TimeTerms overlapped(std::span<const TimeTerms> stages, double steps) {
  TimeTerms sum, slowest;
  for (const TimeTerms& s : stages) {
    sum += s;
    slowest = max(slowest, s);
  }
  return slowest + (sum - slowest) * (1.0 / std::max(steps, 1.0));
}

// `waves` vector tasks on one core that holds `nbuffer` of them at once (n-slot UB
// buffers): the next task's loads run while the previous one computes, and a GM
// transfer's latency hides behind the transfer before it on its pipe, so the latency
// shows once, not per transfer. Two bounds, the larger wins: the busiest pipe plus one
// fill and drain (the first load's latency, one task's share of the other pipes, the
// last store's latency); and each task's chain (load latency, loads, compute, store
// latency, store), of which nbuffer run side by side.
TimeTerms tasks_in_flight(std::span<const TimeTerms> work, const TimeTerms& latency, double waves,
                          int nbuffer) {
  const TimeTerms pipe_bound = overlapped(work, waves) + latency * (1.0 / std::max(waves, 1.0));
  TimeTerms chain = latency;
  for (const TimeTerms& w : work) chain += w;
  return max(pipe_bound, chain * (1.0 / nbuffer));
}

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

  Impl(const TensorGraph& g, const Target& t, Coefficients c)
      : graph(g), target(t), coefficients(std::move(c)), analyzer(graph, target) {
    validate_target();
    ns_per_cycle = 1000.0 / target.clock_mhz;
    tabulate_cube();
    tabulate_vector();
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
  // at the FMA throughput.
  void tabulate_cube() {
    cycles_per_fractal.assign(graph.nodes().size(), 0.0);
    for (const Node& n : graph.nodes()) {
      if (n.kind != OpKind::Matmul) continue;
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
        case MemLevel::GM: break;
      }
    }
    return sum;
  }

  // The PyPTO guide's steady-state L2 hit ratio of Cube operand loads: the tiles of one
  // wave share their panels, nothing is reused across waves.
  double steady_state_hit_ratio(const KernelSummary& k, const TileConfig& config) const {
    const size_t r = k.tile.size();
    if (!k.uses_cube || r < 2) return 0;
    const double mL1 = k.tile[r - 2], nL1 = k.tile[r - 1];
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    int64_t width = n_tiles, height = m_tiles;
    if (config.l2_group) {
      height = std::min(config.l2_group->first, m_tiles);
      width = std::min(config.l2_group->second, n_tiles);
    }
    const int64_t in_flight = tiles_in_flight(k);
    const double n_dim = std::min(in_flight, width);
    const double m_dim = std::min(height, ceil_div(in_flight, static_cast<int64_t>(n_dim)));
    return 1.0 - (mL1 / n_dim + nL1 / m_dim) / (mL1 + nL1);
  }

  // Output tiles the AIC cores work on at once (split-K: each tile's chunks side by side).
  int64_t tiles_in_flight(const KernelSummary& k) const {
    return std::min<int64_t>(num_elements(k.tile_counts),
                             std::max<int64_t>(1, target.aic_cores / std::max<int64_t>(k.split_k, 1)));
  }

  // Rows and columns of one batch entry's tile grid that the first wave of tiles covers,
  // in dispatch order (row-major, or groups of l2_group rows x columns).
  std::pair<int64_t, int64_t> first_wave_extent(const KernelSummary& k, const TileConfig& config) const {
    const size_t r = k.tile.size();
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    const int64_t wave = tiles_in_flight(k);
    if (wave >= m_tiles * n_tiles) return {m_tiles, n_tiles};
    int64_t h = 1, w = n_tiles;
    if (config.l2_group) {
      h = std::min(config.l2_group->first, m_tiles);
      w = std::min(config.l2_group->second, n_tiles);
    }
    // Full bands of h rows, then full groups of h x w tiles, then rows of a partial group.
    const int64_t band = h * n_tiles, group = h * w;
    const int64_t bands = wave / band, groups = wave % band / group, rest = wave % band % group;
    if (bands > 0) {
      const int64_t partial_rows = groups > 0 ? h : std::min(h, ceil_div(rest, w));
      return {std::min(m_tiles, bands * h + partial_rows), n_tiles};
    }
    if (groups > 0) return {h, std::min(n_tiles, groups * w + std::min(w, rest))};
    return {ceil_div(rest, w), std::min(w, rest)};
  }

  // Loads of one Cube operand that wait on an HBM fill, and its HBM bytes, for the busiest
  // core (the one the kernel waits for). The first wave starts cold: its cores wait on the
  // fills of the panels they share. A later wave that reaches a panel no earlier wave
  // touched waits on that fill too; the other re-reads hit while the kernel's footprint
  // fits in L2 (else the guide's steady state holds for the later waves). `cold` is the
  // busiest core's loads scaled back to all tiles, as the rest of the model counts work.
  struct ColdReads {
    double cold = 0;  // loads at the HBM fill rate (a core's own fetch or a shared one)
    double hbm = 0;   // bytes fetched from HBM
  };
  ColdReads cube_operand_cold(const KernelSummary& k, const TensorRead& read, bool is_a,
                              const TileConfig& config) const {
    if (read.l2_resident) return {};
    const size_t r = k.tile.size();
    const int64_t m_tiles = k.tile_counts[r - 2], n_tiles = k.tile_counts[r - 1];
    const int64_t grid = m_tiles * n_tiles;
    const int64_t tiles = num_elements(k.tile_counts), batch = tiles / grid;
    const double per_tile = read.bytes / static_cast<double>(tiles);
    const int64_t wave = tiles_in_flight(k), waves = ceil_div(tiles, wave);
    const double first_wave = static_cast<double>(wave) * per_tile;
    double cold_later_waves = 0;
    ColdReads out;
    if (k.touched_bytes <= static_cast<double>(target.l2_bytes)) {
      const auto [rows, cols] = first_wave_extent(k, config);
      const int64_t panels = batch * (is_a ? m_tiles : n_tiles);
      const int64_t first_panels = std::min(batch, ceil_div(wave, grid)) * (is_a ? rows : cols);
      cold_later_waves = static_cast<double>(std::min(waves - 1, ceil_div(panels - first_panels, first_panels)));
      out.hbm = read.distinct_bytes;
    } else {
      const double miss = 1 - steady_state_hit_ratio(k, config);
      cold_later_waves = static_cast<double>(waves - 1) * miss;
      out.hbm = first_wave + (read.bytes - first_wave) * miss;
    }
    const double busiest = per_tile * (1 + cold_later_waves);
    out.cold = std::min(read.bytes, busiest * static_cast<double>(tiles) / static_cast<double>(waves));
    return out;
  }

  // A vector operand: its first read comes from HBM unless an earlier kernel left it in
  // L2; the cores of the first wave that re-read it (broadcast rows) wait on that fill;
  // later re-reads hit.
  static ColdReads vector_operand_cold(const TensorRead& read, int64_t cores) {
    if (read.l2_resident || read.distinct_bytes <= 0) return {};
    const double rereads = read.bytes / read.distinct_bytes;
    return {std::min(read.bytes, read.distinct_bytes * std::min<double>(cores, rereads)),
            read.distinct_bytes};
  }

  Traffic traffic(const KernelSummary& k, const TileConfig& config) const {
    Traffic r;
    r.workspace_half = k.workspace_bytes / 2;
    r.operand_bytes = std::max(0.0, k.gm_read_bytes - r.workspace_half);
    const int64_t cores = k.uses_cube ? target.aic_cores : (target.split_cores ? target.aiv_cores : target.aic_cores);
    double cold = 0, hbm_read = 0;
    for (const TensorRead& read : k.reads) {
      if (k.uses_cube && read.tensor == k.cube_out) continue;  // the fused workspace stays in L2
      const bool operand = k.uses_cube && (read.tensor == k.cube_a || read.tensor == k.cube_b);
      const ColdReads c = operand ? cube_operand_cold(k, read, read.tensor == k.cube_a, config)
                                  : vector_operand_cold(read, cores);
      cold += c.cold;
      hbm_read += c.hbm;
    }
    r.cold_bytes = std::min(cold, r.operand_bytes);
    r.hit = r.operand_bytes > 0 ? 1.0 - r.cold_bytes / r.operand_bytes : 0;
    const double hbm_write =
        std::max(0.0, k.gm_write_bytes - r.workspace_half - static_cast<double>(target.l2_bytes));
    r.hbm_bytes = hbm_read + hbm_write;
    r.l2_bytes = k.gm_read_bytes + k.gm_write_bytes + (k.split_k > 1 ? k.l0c_out_bytes : 0);
    return r;
  }

  // The summary's totals as per-core-type pipe work.
  void split_work(const KernelSummary& k, const Traffic& traffic, const Coefficients& c,
                  CoreWork& aic, CoreWork& aiv) const {
    const Target& t = target;
    const double vector = vector_cycles(k);
    aiv.tasks = k.aiv_tasks;
    aiv.vector_tasks = true;
    aiv.parts[kVector] = TimeTerms::term(c, Coef::Vector, vector) +
                         TimeTerms::term(c, Coef::Spill, vector * overflow(k, false));
    // A vector task issues its loads back to back (and its stores): one latency each way.
    aiv.parts[kReadLatency] =
        TimeTerms::term(c, Coef::Latency, std::min(k.aiv_gm_loads, k.aiv_tasks) * t.gm_read_latency);
    aiv.parts[kWriteLatency] =
        TimeTerms::term(c, Coef::Latency, std::min(k.aiv_gm_stores, k.aiv_tasks) * t.gm_write_latency);
    const double cold = traffic.cold_bytes, hit_bytes = traffic.operand_bytes - traffic.cold_bytes;
    if (!k.uses_cube) {
      aiv.parts[kMte2Hbm] = TimeTerms::term(c, Coef::Hbm, cold / t.gm_read_bpc);
      aiv.parts[kMte2L2] = TimeTerms::term(c, Coef::L2, hit_bytes / t.l2_read_bpc);
      aiv.parts[kMte3] = TimeTerms::term(c, Coef::OnChip, k.gm_write_bytes / t.ub_to_gm_bpc);
      return;
    }
    aiv.parts[kMte2L2] = TimeTerms::term(c, Coef::L2, traffic.workspace_half / t.l2_read_bpc);
    if (k.aiv_tasks > 0) {
      aiv.parts[kMte3] = TimeTerms::term(
          c, Coef::OnChip, std::max(0.0, k.gm_write_bytes - traffic.workspace_half) / t.ub_to_gm_bpc);
    }
    const double cube_cycles = k.fractals * kernel_cycles_per_fractal(k);
    aic.tasks = k.aic_tasks;
    aic.steps_per_task = std::max<int64_t>(k.k_steps, 1);
    aic.parts[kMte2Hbm] = TimeTerms::term(c, Coef::Hbm, cold / t.gm_read_bpc);
    aic.parts[kMte2L2] = TimeTerms::term(c, Coef::L2, hit_bytes / t.l2_read_bpc);
    aic.parts[kReadLatency] = TimeTerms::term(c, Coef::Latency, k.aic_gm_loads * t.gm_read_latency);
    aic.parts[kWriteLatency] = TimeTerms::term(c, Coef::Latency, k.aic_gm_stores * t.gm_write_latency);
    aic.parts[kMte1] = TimeTerms::term(c, Coef::OnChip,
                                       k.l1_to_l0a_bytes / t.l1_to_l0a_bpc + k.l1_to_l0b_bytes / t.l1_to_l0b_bpc +
                                           mte1_move_latency_cycles(k, t));
    aic.parts[kCube] = TimeTerms::term(c, Coef::Cube, cube_cycles) +
                       TimeTerms::term(c, Coef::Spill, cube_cycles * overflow(k, true));
    aic.parts[kFix] = TimeTerms::term(
        c, Coef::OnChip, k.l0c_out_bytes / std::min(t.l0c_to_ub_bpc, t.l2_write_bpc));
    if (k.split_k > 1) {  // an atomic add reads the partial sum back before writing it
      aic.parts[kFix] += TimeTerms::term(c, Coef::L2, k.l0c_out_bytes / t.l2_read_bpc);
    }
  }

  CoreRun core_time(const CoreWork& w, int64_t cores, int nbuffer, double instrs_per_task,
                    const Coefficients& c) const {
    CoreRun run;
    run.waves = ceil_div(w.tasks, cores);
    run.idle_fraction = 1.0 - static_cast<double>(w.tasks) / static_cast<double>(run.waves * cores);
    const double share = static_cast<double>(run.waves) / static_cast<double>(w.tasks);
    std::array<TimeTerms, kNumParts> busiest;
    for (int p = 0; p < kNumParts; ++p) {
      busiest[p] = w.parts[p] * share;
      run.part_cycles[p] = busiest[p].value();
    }
    // A core type writes back through either FIX (AIC) or MTE3 (AIV): one pipe.
    const std::array<TimeTerms, 5> work = {busiest[kMte2Hbm] + busiest[kMte2L2], busiest[kMte1],
                                           busiest[kCube], busiest[kVector], busiest[kFix] + busiest[kMte3]};
    if (nbuffer >= 2 && w.vector_tasks) {
      run.time = tasks_in_flight(work, busiest[kReadLatency] + busiest[kWriteLatency],
                                 static_cast<double>(run.waves), nbuffer);
    } else {
      std::array<TimeTerms, 5> pipes = work;  // each transfer holds its pipe for the GM latency
      pipes.front() += busiest[kReadLatency];
      pipes.back() += busiest[kWriteLatency];
      if (nbuffer >= 2) {
        run.time = overlapped(pipes, static_cast<double>(run.waves * w.steps_per_task));
      } else {
        for (const TimeTerms& p : pipes) run.time += p;
      }
    }
    const TimeTerms task = TimeTerms::term(c, Coef::Task, run.waves);
    const TimeTerms instr = TimeTerms::term(c, Coef::Instr, run.waves * instrs_per_task);
    run.time += task + instr;
    run.task = task.value();
    run.instr = instr.value();
    return run;
  }

  // One kernel's time in cycles, its launch included; fills `detail` (in cycles) when given.
  TimeTerms kernel_time(const KernelSummary& k, const TileConfig& config, const Coefficients& c,
                        KernelEstimate* detail) const {
    const Target& t = target;
    const Traffic traffic = this->traffic(k, config);
    CoreWork aic, aiv;
    split_work(k, traffic, c, aic, aiv);
    const int nbuffer = config.nbuffer_or_default();
    const int64_t all_tasks = k.aic_tasks + k.aiv_tasks;
    const double instrs_per_task = all_tasks > 0 ? static_cast<double>(k.instructions) / all_tasks : 0;
    const int64_t aiv_cores = t.split_cores ? t.aiv_cores : t.aic_cores;

    CoreRun aic_run, aiv_run;
    if (aic.tasks > 0) aic_run = core_time(aic, t.aic_cores, nbuffer, instrs_per_task, c);
    if (aiv.tasks > 0) aiv_run = core_time(aiv, aiv_cores, nbuffer, instrs_per_task, c);
    TimeTerms cores;
    if (t.split_cores && aic.tasks > 0 && aiv.tasks > 0) {
      const std::array<TimeTerms, 2> stages = {aic_run.time, aiv_run.time};
      cores = overlapped(stages, static_cast<double>(aic_run.waves));
    } else {
      cores = aic_run.time + aiv_run.time;
    }

    const double cycles_per_gbps_byte = t.clock_mhz / 1000.0;  // cycles per byte at 1 GB/s
    const TimeTerms hbm_roof = TimeTerms::term(c, Coef::Hbm, traffic.hbm_bytes * cycles_per_gbps_byte / t.hbm_gbps);
    const TimeTerms l2_roof = TimeTerms::term(c, Coef::L2, traffic.l2_bytes * cycles_per_gbps_byte / t.l2_gbps);
    const TimeTerms launch = TimeTerms::term(c, Coef::Launch, 1);
    const TimeTerms total = max(max(cores, hbm_roof), l2_roof) + launch;

    if (detail) {
      const CoreRun& main = k.uses_cube ? aic_run : aiv_run;
      detail->kernel = k.kernel;
      detail->uses_cube = k.uses_cube;
      detail->aic_tasks = k.aic_tasks;
      detail->aiv_tasks = k.aiv_tasks;
      detail->waves = main.waves;
      detail->idle_fraction = main.idle_fraction;
      detail->split_k = k.split_k;
      detail->l2_hit_ratio = traffic.hit;
      detail->mte2_bytes = k.gm_read_bytes;
      detail->hbm_bytes = traffic.hbm_bytes;
      detail->time_ns = total.value();
      Breakdown& b = detail->breakdown;
      for (const CoreRun* run : {&aic_run, &aiv_run}) {
        const auto& p = run->part_cycles;
        b.mte2_hbm = std::max(b.mte2_hbm, p[kMte2Hbm]);
        b.mte2_l2 = std::max(b.mte2_l2, p[kMte2L2]);
        b.mte1 = std::max(b.mte1, p[kMte1]);
        b.cube = std::max(b.cube, p[kCube]);
        b.vector = std::max(b.vector, p[kVector]);
        b.fix = std::max(b.fix, p[kFix]);
        b.mte3 = std::max(b.mte3, p[kMte3]);
        b.read_latency = std::max(b.read_latency, p[kReadLatency]);
        b.write_latency = std::max(b.write_latency, p[kWriteLatency]);
        b.task = std::max(b.task, run->task);
        b.instr = std::max(b.instr, run->instr);
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

  // The whole program's time in cycles.
  TimeTerms program_time(const TilingSummary& s, const TileConfig& config, const Coefficients& c,
                         std::vector<KernelEstimate>* details) const {
    TimeTerms total;
    if (details) details->resize(s.kernels.size());
    for (size_t i = 0; i < s.kernels.size(); ++i) {
      total += kernel_time(s.kernels[i], config, c, details ? &(*details)[i] : nullptr);
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
    e.predicted_ns = program_time(s, config, coefficients, &e.kernels).value() * ns_per_cycle;
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
    for (double* f : {&b.mte2_hbm, &b.mte2_l2, &b.read_latency, &b.mte1, &b.cube, &b.vector, &b.fix,
                      &b.mte3, &b.write_latency, &b.launch, &b.task, &b.instr, &b.hbm_roofline,
                      &b.l2_roofline}) {
      *f *= ns_per_cycle;
    }
  }

  double predict_ns(const TileConfig& config) const {
    const TilingSummary s = analyzer.analyze(config);
    if (!s.feasible) return kInfinity;
    return program_time(s, config, coefficients, nullptr).value() * ns_per_cycle;
  }
};

CostModel::CostModel(const TensorGraph& graph, const Target& target)
    : CostModel(graph, target, Coefficients::defaults(target)) {}

CostModel::CostModel(const TensorGraph& graph, const Target& target, Coefficients coefficients)
    : impl_(std::make_unique<Impl>(graph, target, std::move(coefficients))) {}

CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

Estimate CostModel::estimate(const TileConfig& config) const {
  return impl_->estimate(impl_->analyzer.analyze(config), config);
}

Estimate CostModel::estimate(const TilingSummary& summary, const TileConfig& config) const {
  return impl_->estimate(summary, config);
}

double CostModel::predict_ns(const TileConfig& config) const { return impl_->predict_ns(config); }

void CostModel::score(std::span<const TileConfig> configs, std::span<double> predicted_ns) const {
  if (configs.size() != predicted_ns.size()) {
    usage_error("CostModel::score: " + std::to_string(configs.size()) + " configs but " +
                std::to_string(predicted_ns.size()) + " result slots");
  }
  for (size_t i = 0; i < configs.size(); ++i) predicted_ns[i] = impl_->predict_ns(configs[i]);
}

TilingSummary CostModel::analyze(const TileConfig& config) const {
  return impl_->analyzer.analyze(config);
}

TimeTerms CostModel::terms(const TilingSummary& summary, const TileConfig& config,
                           const Coefficients& coefficients) const {
  if (!summary.feasible) usage_error("CostModel::terms: the config is infeasible");
  return impl_->program_time(summary, config, coefficients, nullptr) * impl_->ns_per_cycle;
}

const Coefficients& CostModel::coefficients() const { return impl_->coefficients; }
void CostModel::set_coefficients(Coefficients coefficients) {
  impl_->coefficients = std::move(coefficients);
}
const Target& CostModel::target() const { return impl_->target; }
const TensorGraph& CostModel::graph() const { return impl_->graph; }

}  // namespace pto
