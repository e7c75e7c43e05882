// core::analyze — the cheap, closed-form tiling summary of a (graph, config, target).
//
// Feasibility (every violated capacity/alignment rule, with its numbers) and, per fused
// kernel, tile counts and tails, task counts per core type, bytes per memory level,
// the GM tensors it reads (re-reads and L2 residency, for the cost model's L2 reuse),
// Cube fractal work and vector work — all without generating instructions. The cost
// model scores candidates from this summary, so it must be fast (an Analyzer is built
// once per graph and then called per config) and it must agree with what the full
// pipeline produces; tests/core check that for random configs.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/program.h"
#include "core/target.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto {

// One broken rule, e.g. {"L0C capacity", "mL0=256 x nL0=256 x 4 B = 262144 B > L0C 131072 B"}.
struct Violation {
  std::string rule;
  std::string detail;
};
std::string format_violations(const std::vector<Violation>& v);  // one per line

// Vector work of one op kind within a kernel. `repeats` is the sum over its
// instructions of ceil(bytes / 256): the Ascend vector cost is
// instrs * latency + (repeats - instrs) * (elements per 256 B / parallelism).
struct VectorWork {
  OpKind op = OpKind::Add;
  bool reduce = false;
  DType dtype = DType::F32;
  int64_t instrs = 0;
  int64_t repeats = 0;
  int64_t elements = 0;
};

// One GM tensor a kernel reads, for the cost model's L2 reuse: how much is re-read, and
// whether it is still in L2 from an earlier kernel.
struct TensorRead {
  int tensor = -1;              // the partition's GM tensor id (a view: the view's id)
  double bytes = 0;             // read over all tasks
  double distinct_bytes = 0;    // of the tensor, read at least once
  // An earlier kernel wrote or read it, and the distinct bytes the kernels since touched
  // (its own included) fit in L2: an LRU L2 still holds it, so even its first read hits.
  bool l2_resident = false;
};

// A MIX (flash_attention) kernel's tiling as the model and the program key see it: the
// loop blocks and their spread over the cores, each matmul's L0 tile, the vector stages'
// row slices and how far QK runs ahead of PV (passes::AttentionTiling has the rest).
struct AttentionKernelTiles {
  int64_t q_tile = 0, kv_tile = 0, splits = 0, order = 0;
  int64_t qk_m = 0, qk_k = 0, qk_n = 0;
  int64_t pv_m = 0, pv_k = 0, pv_n = 0;
  int64_t v1_rows = 0, v2_rows = 0;
  int64_t preload = 0;
  // Every field, in declaration order: what tells two programs apart.
  std::array<int64_t, 13> fields() const {
    return {q_tile, kv_tile, splits, order, qk_m, qk_k, qk_n, pv_m, pv_k, pv_n, v1_rows, v2_rows, preload};
  }
};

struct KernelSummary {
  int kernel = -1;
  std::vector<NodeId> nodes;
  bool uses_cube = false;
  bool combine = false;   // the compiler's kernel that sums split partials (combine_kernel.h)
  Shape iteration;        // the kernel's iteration space (cube: [batch..., M, N])
  Shape tile;             // full tile per iteration dim (cube: [1..., mL1, nL1])
  Shape tile_counts;      // tiles per dim
  Shape tail;             // extent of the last tile per dim (== tile where it divides)
  int64_t aic_tasks = 0;
  int64_t aiv_tasks = 0;
  int64_t instructions = 0;  // executed over all tasks, flags included (MIX: on unit 0 in aic_instructions)
  int64_t aic_instructions = 0;  // of them, in cube tasks

  // Split reductions (a vector tile that cuts the reduced dim): the dim each task streams,
  // in `stream_chunks` chunks of tile[stream_dim], `stream_passes` times over.
  int stream_dim = -1;
  int64_t stream_chunks = 0;
  int64_t stream_passes = 0;

  // MIX kernels (flash_attention): tasks on clusters of an AIC and its vector units, each
  // looping over KV blocks (loop_steps over all tasks; the longest task's), and the tiles
  // handed between the Cube and the vector units (through the L2 workspace, or direct),
  // by the side that moves them (0: the Cube unit, 1: the vector units) and pipe.
  // `attention`: the kernel's tiling (the loop blocks, the stages' tiles), for the model
  // and the program key.
  int64_t mix_tasks = 0;
  int64_t loop_steps = 0;
  int64_t longest_task_steps = 0;
  // The cluster that runs longest as tasks are dispatched in order: its KV blocks and tasks.
  int64_t busiest_cluster_steps = 0, busiest_cluster_tasks = 0;
  std::array<std::array<double, kNumPipes>, 2> handoff_bytes{};
  std::array<std::array<int64_t, kNumPipes>, 2> handoff_moves{};
  std::optional<AttentionKernelTiles> attention;

  // Cube kernels.
  int64_t k_steps = 0;       // L1-level K iterations per cube task
  // L0A / L0B slots: with one, a TMATMUL's operands load only after the previous
  // TMATMUL released them, so MTE1 and the Cube take turns instead of overlapping.
  int l0_slots = 1;
  int64_t split_k = 1;       // K chunks per output tile (1 without split-K)
  bool atomic_split_k = false;  // the chunks add into the output atomically (int32); fp32 stores partials
  int64_t tmatmuls = 0;
  int64_t fractals = 0;      // fractal MACs issued, partial fractals counted whole
  double useful_flops = 0;   // 2*M*N*K over the batch

  // Bytes moved, totals over the kernel's tasks.
  double gm_read_bytes = 0;  // MTE2 loads from GM (operands, vector inputs, workspace)
  double gm_write_bytes = 0; // MTE3 / FIX stores to GM
  double l1_to_l0a_bytes = 0;
  double l1_to_l0b_bytes = 0;
  double l0c_out_bytes = 0;  // FIX traffic out of L0C
  double workspace_bytes = 0;  // fused cube->vector intermediate, written + read back
  // GM transfer instructions (TLOAD / TSTORE) over all tasks, by core type: each one
  // holds its pipe for a GM latency, so the cost model charges them per instruction.
  int64_t aic_gm_loads = 0, aic_gm_stores = 0;
  // A Cube task's TLOADs in groups that one flag hands on (a K step's A and B loads, then
  // SET_FLAG MTE2 -> MTE1): the loads of a group follow each other a transfer apart, and
  // the group's flag waits for the last, so a group, not a load, waits a GM latency.
  int64_t aic_load_groups = 0;
  int64_t aiv_gm_loads = 0, aiv_gm_stores = 0;

  // L2 reuse: every GM tensor read, once; the Cube operands' ids (-1 in vector kernels);
  // distinct bytes read and written (the kernel's footprint in L2).
  std::vector<TensorRead> reads;
  int cube_a = -1, cube_b = -1, cube_out = -1;
  double touched_bytes = 0;

  std::vector<VectorWork> vector_work;
  // Vector tasks: no stored value shares UB bytes with a loaded one, so with one buffer
  // slot the next task's loads run while this one stores.
  bool loads_clear_of_stores = true;
  std::map<MemLevel, int64_t> footprint;  // peak bytes per local level, one task
  // Slots of its pipelined buffers: the config's nbuffer, or what the compiler picked
  // (two where they fit, else one) when the config gives none.
  int nbuffer = 1;
  // UB bytes a task's instructions address: every value's first slot, which is all the
  // program names. A loaded value's further slots (nbuffer > 1) count in the footprint,
  // which sizes UB, but no instruction touches them.
  int64_t ub_addressed_bytes = 0;
  std::vector<int> after;                 // kernel-level dependencies
};

struct TilingSummary {
  bool feasible = true;
  std::vector<Violation> violations;
  std::vector<KernelSummary> kernels;
  int64_t instructions() const;
  int64_t tasks() const;
  // Within kMaxTasks and kMaxInstructions (core/size_limits.h): compile would build it.
  bool within_program_limits() const;
};

// Prepares the graph-dependent part once; analyze() is then cheap per config.
class Analyzer {
 public:
  Analyzer(const TensorGraph& graph, const Target& target);
  ~Analyzer();
  Analyzer(Analyzer&&) noexcept;
  TilingSummary analyze(const TileConfig& config) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

TilingSummary analyze(const TensorGraph& graph, const TileConfig& config, const Target& target);

}  // namespace pto
