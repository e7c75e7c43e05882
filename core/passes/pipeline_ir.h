// The compiler's internal IR between passes: what the fusion partition hands to tile
// expansion, and what tile expansion hands to block partition, codegen and analyze.
//
// Map, in pipeline order:
//   ResolvedConfig  the TileConfig with the op-agnostic fallbacks filled in (resolve_config)
//   Partition       GM tensors (views as aliases) and kernel specs (fusion_partition)
//   KernelSpec      one kernel: a Cube part (matmul) and/or a VectorBody (UB dataflow)
//   VectorBody      the UB values of one vector task and the steps between them, in
//                   iteration-space terms, so that any tile size instantiates it
//   StreamPlan      a vector kernel whose tile cuts the dim it reduces over: which steps
//                   run in which pass over the chunks of that dim (stream_plan)
//   AttentionSpec   flash_attention's tensors and sizes (fusion_partition)
//   AttentionTiling its KV loop, stage tiles and cluster buffers (attention_tiling)
//   TiledKernel     a kernel with its tile sizes, tile grid, UB layout and footprint
//                   (tile_expansion); analyze() counts from it, codegen emits from it
//
// Nothing here builds strings on the analyze() path except violation details.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/analyze.h"
#include "core/program.h"
#include "core/shape.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"

namespace pto::passes {

// How messages and dumps name a graph node: `%3 exp "e"`.
inline std::string node_label(const Node& n) {
  std::string s = "%";
  s += std::to_string(n.id);
  return s + " " + op_kind_name(n.kind) + " \"" + n.name + "\"";
}

// ---- Resolved config ------------------------------------------------------------------

struct ResolvedConfig {
  std::optional<Shape> vec;     // absent: each vector kernel takes the op-agnostic fallback
  CubeTile cube;                // the config's, or the fp16 default
  ReduceForm reduce_form = ReduceForm::Online;  // a tile that cuts the reduced dim
  std::optional<AttentionTiles> attention;       // flash_attention's loop tiles
  std::map<std::string, StageTiles> stages;      // its tile set per stage
  // The config's n-buffer depth. Absent: each kernel's depth is what PyPTO's compiler
  // picks (two slots where they fit, else one; tile_expansion.cpp); flash_attention's,
  // whose depth is its kernel's QK preload, then takes 1.
  std::optional<int> nbuffer;
  std::optional<std::pair<int64_t, int64_t>> l2_group;
  std::optional<std::vector<std::vector<int>>> fusion;
};

// ---- Vector bodies ----------------------------------------------------------------------

// Which iteration dims a value spans (bit d set: its extent follows the tile in dim d;
// clear: extent 1, broadcast).
using DimMask = uint32_t;
inline bool spans(DimMask m, int d) { return (m >> d) & 1u; }

enum class ValueKind { Load, Node, Fill };

// One UB value of a vector task: an input loaded from GM, a node's result, or a constant.
struct VecValue {
  ValueKind kind = ValueKind::Node;
  std::string name;         // buffer name stem: the GM tensor or node name
  DType dtype = DType::F32;
  DimMask mask = 0;
  int def = 0;              // instruction position: loads 0, step i at i+1, stores at steps+1
  int last_use = 0;         // last position that reads it (stores included)
};

// A GM window a vector task reads, writes or takes its position from: tensor dim t
// follows iteration dim dim_map[t] (when the mask spans it; else extent 1, origin 0).
struct GmAccess {
  int value = -1;           // UB value loaded or stored (-1 for a position operand)
  int tensor = -1;
  std::vector<int> dim_map;
  DimMask mask = 0;
};

struct VecStep {
  Opcode op = Opcode::TVEC;         // TVEC, TREDUCE or TFILL
  OpKind vop = OpKind::Add;
  int dst = -1;
  std::vector<int> src;             // UB values
  std::optional<double> scalar;
  bool scalar_first = false;
  int reduce_dim = -1;              // iteration dim
  int position = -1;                // CausalMask: index into VectorBody::positions
};

struct VectorBody {
  Shape iteration;
  std::vector<VecValue> values;
  std::vector<GmAccess> loads;      // in value order
  std::vector<GmAccess> positions;  // CausalMask global-position operands
  std::vector<VecStep> steps;
  std::vector<GmAccess> stores;
  std::vector<int> reduce_dims;     // iteration dims the tile must cover whole
  std::vector<NodeId> reduce_nodes; // the reduction of each entry above
  bool empty() const { return steps.empty(); }
  int end_position() const { return static_cast<int>(steps.size()) + 1; }
};

// ---- Kernels --------------------------------------------------------------------------

// Copy, Zero and Combine are the compiler's own kernels: view copies, split-K's zeroing
// and the combine of flash_attention's split partials.
enum class KernelKind { Cube, Vector, Copy, Zero, Attention, Combine };

struct CubeSpec {
  NodeId matmul = -1;
  int a = -1, b = -1, c = -1;       // GM tensors of the operands and the output
  bool transpose_a = false, transpose_b = false;
  DType in = DType::F16, acc = DType::F32, out = DType::F32;
  Shape batch;                      // batch dims of the output
  int64_t m = 0, n = 0, k = 0;
};

// flash_attention: its tensors and sizes. A KV head's query rows are its G = H / KVH
// heads stacked ([B, KVH, G*SQ, D], views of q and out): one task's rows may span heads,
// and grouped-query attention loads each K/V block once for all of them.
struct AttentionSpec {
  NodeId node = -1;
  int q = -1, k = -1, v = -1, k_scale = -1, v_scale = -1, out = -1;  // GM tensors
  int q_rows = -1, out_rows = -1;   // the stacked views [B, KVH, G*SQ, D]
  int positions = -1;               // the causal mask's position view [B, H, SQ, SKV] (no storage)
  int64_t batch = 1, heads = 1, kv_heads = 1, sq = 1, skv = 1, dim = 1;
  bool causal = false;
  double scale = 1;
  DType in = DType::F16, kv = DType::F16;
  int64_t group() const { return heads / kv_heads; }
  int64_t rows() const { return group() * sq; }
  bool quantized() const { return kv == DType::I8; }
};

struct KernelSpec {
  KernelKind kind = KernelKind::Vector;
  std::string name;
  std::vector<NodeId> nodes;        // graph nodes (none for Copy and Zero kernels)
  std::optional<CubeSpec> cube;
  std::optional<AttentionSpec> attention;
  VectorBody body;                  // Vector/Copy kernels; the epilogue of a Cube kernel
  VectorBody zero_body;             // Cube: the TFILL body that zeroes the output for split-K
  std::vector<int> after;           // kernel indices
};

struct Partition {
  std::vector<GmTensor> tensors;    // graph node i is tensor i; materialised copies follow
  std::vector<KernelSpec> kernels;  // topological order
  std::vector<std::vector<int>> fusion;  // the graph-node groups, in kernel order
};

// ---- Tiles ------------------------------------------------------------------------------

// One iteration dim cut into tiles: `count` tiles of `tile`, the last one `tail` long.
struct DimSplit {
  int64_t size = 1, tile = 1, count = 1, tail = 1;
  int64_t extent(int64_t index) const { return index + 1 == count ? tail : tile; }
};
inline DimSplit split_dim(int64_t size, int64_t tile) {
  tile = std::max<int64_t>(1, std::min(tile, size));
  const int64_t count = ceil_div(size, tile);
  return {size, tile, count, size - (count - 1) * tile};
}

// The effective Cube tile of one matmul (sizes clamped to the dims, L0 to L1) and the
// K loop: steps of k_step; an A tile is loaded every ra steps, a B tile every rb.
struct CubeTiling {
  int64_t mL0 = 0, mL1 = 0, nL0 = 0, nL1 = 0;
  int64_t kL0 = 0, kAL1 = 0, kBL1 = 0, k_step = 0;
  int64_t ra = 1, rb = 1;
  int64_t steps = 0;                // K steps over the whole K
  // Slots per buffer: an operand's L1 tile gets the kernel's depth, but no more slots than
  // a task has loads of it (an A tile that spans K is loaded once and keeps one slot);
  // L0A/L0B get l0_slots each.
  int a_slots = 1, b_slots = 1, l0_slots = 1;
  // fp32 split-K: the program tensor the chunks store their sums in ([batch..., chunks*M,
  // N], chunk c at rows c*M..), summed by a Combine kernel; -1: one chunk, or int32's
  // atomic adds into the output.
  int partials = -1;
  int64_t chunk_steps = 0;          // K steps per split-K chunk
  int64_t chunks = 1;
  int64_t batch = 1;                // product of the batch dims
  DimSplit m, n;
  // Buffer sizes in bytes, one slot each.
  int64_t a_l1 = 0, b_l1 = 0, a_l0 = 0, b_l0 = 0, c_l0 = 0;
  // The K range of a chunk: [chunk * chunk_steps * k_step, +chunk_k(chunk)).
  int64_t chunk_k(int64_t chunk, int64_t k) const {
    return std::min(k, (chunk + 1) * chunk_steps * k_step) - chunk * chunk_steps * k_step;
  }
};

// ---- Split reductions ---------------------------------------------------------------------

// Two reductions a streamed kernel accumulates in one pass instead of two, each chunk
// rescaling what the chunks before it accumulated (docs/compiler.md, "Split reductions").
enum class MergeKind {
  SoftmaxSum,  // first = amax(x), second = sum(exp(x - first)): a running max and sum
  Variance,    // first = sum(x), second = sum((x - first/n)^2): Chan's running mean and M2
};

struct OnlineMerge {
  MergeKind kind = MergeKind::SoftmaxSum;
  int first = -1;     // body step of the first reduction
  int second = -1;    // body step of the second
  int source = -1;    // the chunk value both reduce
};

// One pass over a task's chunks: per chunk, reload the chunk inputs, recompute the chunk
// values the pass needs, fold the chunk into the reductions that complete with it and
// store the outputs that are final in it; after the last chunk, the steps on row
// values that the completed reductions allow.
struct StreamPass {
  std::vector<int> loads;        // indices into VectorBody::loads (chunk inputs)
  std::vector<int> steps;        // body steps run on every chunk, in body order
  std::vector<int> reductions;   // body TREDUCE steps folded chunk by chunk
  std::vector<OnlineMerge> merges;
  std::vector<int> stores;       // indices into VectorBody::stores, chunk by chunk
  std::vector<int> row_steps;    // body steps on row values, once after the pass
  std::vector<int> row_stores;   // indices into VectorBody::stores, once after the pass
};

// A vector kernel whose tile cuts `dim`, the dim all its reductions run over: a task
// covers its rows' whole `dim` in chunks of the tile's width, in passes.
struct StreamPlan {
  int dim = -1;
  std::vector<int> row_loads;    // VectorBody::loads that do not span dim: once per task
  std::vector<int> row_steps;    // steps on those alone: once, before the first pass
  std::vector<StreamPass> passes;
};

// The UB layout of one vector task: every value's slots with their byte offsets.
// A streamed kernel also holds buffers no body value names (`value` -1): an
// accumulator's other half and the merges' temporaries, named by `scratch`.
struct UbBuffer {
  int value = -1;
  int slot = 0;
  int64_t bytes = 0;
  int64_t offset = 0;
  std::string scratch;   // value -1: the buffer's name
  DimMask mask = 0;      // value -1: the dims it spans
  DType dtype = DType::F32;
  int pass = -1;         // streamed chunk values: the pass whose chunks compute it
};

struct VecTiling {
  Shape tile;                       // full tile (Cube epilogue: the sub-tile of a Cube tile)
  std::vector<DimSplit> dims;       // vector kernels: the tile grid over the iteration space
  std::vector<UbBuffer> buffers;
  int64_t ub_bytes = 0;
  // Streamed kernels: the plan, and the chunks of the streamed dim (`dims` then has
  // one tile along it: a task covers it whole).
  std::optional<StreamPlan> stream;
  DimSplit chunks;
};

constexpr int kNumLevels = 7;  // MemLevel GM..WS
using LevelBytes = std::array<int64_t, kNumLevels>;

// One local buffer of a MIX task, as tile expansion lays it out and codegen declares it.
struct ClusterBuffer {
  std::string name;
  MemLevel level = MemLevel::UB;
  int unit = 0;
  DType dtype = DType::F32;
  Shape shape;
  Layout layout = Layout::RowMajor;
  int64_t offset = 0;
  int64_t bytes = 0;
};

// flash_attention's loop as it will run (attention_tiling.h): which rows, KV blocks and
// splits a task owns, the matmuls' L0 sub-tiles, the vector stages' row slices, and the
// buffers of the largest task.
struct AttentionTiling {
  int64_t q_tile = 0, kv_tile = 0;
  TaskOrder order = TaskOrder::Bhq;
  DimSplit row_blocks;        // a KV head's stacked query rows, by q_tile
  DimSplit kv_blocks;         // SKV, by kv_tile
  int64_t splits = 1;         // tasks sharing one row block's KV blocks (FlashDecoding)
  int units = 1;              // vector units per cluster: each owns a share of the rows
  bool split_cores = true;    // the units are cores of their own (else all run on the one core)
  bool direct = true;         // tiles hand off directly (cv_direct), else through WS
  int nbuffer = 1;            // slots of the units' own pipelined buffers (L1, L0, UB slices)
  int preload = 0;            // KV blocks the Cube's QK runs ahead of its PV
  int fifo = 1;               // slots of a Cube-vector hand-off (S, P, O_j, alpha): preload + 1
  struct L0 {
    int64_t m = 0, k = 0, n = 0;
  };
  L0 qk, pv;                  // S = Q K^T: m rows, k head dim, n KV; O = P V: m rows, k KV, n head dim
  int64_t v1_rows = 0, v2_rows = 0;  // rows of a softmax / update slice on one unit
  int64_t dq_rows = 0;        // int8 KV: tokens a vector unit dequantizes at a time
  std::vector<ClusterBuffer> buffers;
  // (name, unit) -> indices into `buffers` by slot: "s.ub[1]" is slot 1 of "s.ub".
  std::map<std::pair<std::string, int>, std::vector<int>> slots;
  int first_extra_tensor = -1; // splits > 1: the partials' tensors in TilePlan::extra_tensors
  // A vector unit's share of `rows` task rows: an equal share, in whole 16-row fractals
  // (the last unit takes what is left, perhaps nothing).
  // The unit number of vector unit u (1..units): u, or 0 where the units are one core.
  int vector_unit(int u) const { return split_cores ? u : 0; }
  int64_t unit_rows(int64_t rows) const { return units == 1 ? rows : std::min(rows, align_up(ceil_div(rows, units), 16)); }
};

// A kernel as it will run. A Zero kernel (split-K's TFILL of the output) shares the
// spec of the Cube kernel it precedes.
struct TiledKernel {
  int spec = -1;                    // index into Partition::kernels
  KernelKind kind = KernelKind::Vector;
  std::vector<int> after;           // indices into TilePlan::kernels
  const VectorBody* body = nullptr; // vector work per task (empty for a plain matmul)
  std::shared_ptr<const VectorBody> own_body;  // a body made by the tiling (the split's combine)
  CubeTiling cube;
  VecTiling vec;
  std::optional<AttentionTiling> attention;
  LevelBytes footprint{};           // peak bytes per local level of one task
  int nbuffer = 1;                  // slots of its pipelined L1/UB buffers (tile_expansion.cpp)
};

struct TilePlan {
  std::vector<TiledKernel> kernels;
  std::vector<Violation> violations;
  bool feasible = true;
  // GM tensors the tiling adds (flash_attention's split partials), numbered after the
  // partition's.
  std::vector<GmTensor> extra_tensors;
};

}  // namespace pto::passes
