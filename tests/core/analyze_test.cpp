// analyze() against compile(): for random shapes (ragged tails) and random configs of
// every op in the library, on ascend910b1 (hard capacities) and the host (soft), the
// closed-form summary must equal what the generated program does — task counts per
// core type, instructions, bytes per level, fractals, vector work, footprints — and
// both must list the same violations. A task's addressed UB bytes are those its
// instructions name.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include "core/analyze.h"
#include "core/compile.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/target.h"
#include "tests/random_attention_config.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

// ---- What a compiled program does, measured instruction by instruction ----------------

struct Measured {
  int64_t aic_tasks = 0, aiv_tasks = 0, mix_tasks = 0, instructions = 0, tmatmuls = 0, fractals = 0;
  int64_t aic_gm_loads = 0, aic_gm_stores = 0, aiv_gm_loads = 0, aiv_gm_stores = 0;
  int64_t aic_load_groups = 0;  // runs of TLOADs on a Cube task's MTE2 (a MIX task's Cube loads: each its own)
  int64_t aic_instructions = 0;
  double gm_read = 0, gm_write = 0, l0a = 0, l0b = 0, l0c_out = 0, workspace = 0;
  // MIX tasks: tiles moved between the Cube's and the vector units' memories, by side
  // (0: the Cube unit, 1: a vector unit) and pipe.
  std::array<std::array<double, kNumPipes>, 2> handoff_bytes{};
  std::array<std::array<int64_t, kNumPipes>, 2> handoff_moves{};
  std::map<std::tuple<OpKind, bool, DType>, std::tuple<int64_t, int64_t, int64_t>> vector;  // instrs, repeats, elems
  std::map<MemLevel, int64_t> footprint;
  std::map<int, double> read_by_tensor;  // TLOAD bytes per GM tensor
  std::map<int, double> tensor_bytes;    // each tensor's size
  bool loads_clear_of_stores = true;     // no TSTORE from UB bytes a TLOAD writes
  int64_t ub_addressed = 0;              // UB bytes the instructions of one task name
};

const LocalBuffer& buffer_of(const BlockProgram& b, const Operand& o) {
  for (const LocalBuffer& x : b.buffers)
    if (x.id == o.id) return x;
  throw std::runtime_error("operand names a missing buffer " + std::to_string(o.id));
}

bool loads_clear_of_stores(const BlockProgram& b) {
  for (const Instr& store : b.instrs) {
    if (store.op != Opcode::TSTORE || store.src[0].level != MemLevel::UB) continue;
    for (const Instr& load : b.instrs)
      if (load.op == Opcode::TLOAD && load.dst.level == MemLevel::UB &&
          buffer_of(b, store.src[0]).shares_bytes(buffer_of(b, load.dst)))
        return false;
  }
  return true;
}

// The bytes of the union of the UB buffers that some instruction of `b` names.
int64_t ub_addressed(const BlockProgram& b) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  auto add = [&](const Operand& o) {
    if (o.level != MemLevel::UB) return;
    const LocalBuffer& x = buffer_of(b, o);
    ranges.emplace_back(x.byte_offset, x.byte_offset + x.bytes());
  };
  for (const Instr& in : b.instrs) {
    add(in.dst);
    for (const Operand& o : in.src) add(o);
  }
  return union_bytes(std::move(ranges));
}

// One vector instruction: the widest UB operand sets the repeats and the dtype.
void count_vector(const BlockProgram& b, const Instr& in, Measured& m) {
  int64_t bytes = 0, elems = 0;
  DType dtype = DType::F32;
  std::vector<Operand> ops = {in.dst};
  ops.insert(ops.end(), in.src.begin(), in.src.end());
  for (const Operand& o : ops) {
    if (o.level != MemLevel::UB) continue;
    const int64_t e = num_elements(o.extent), by = e * dtype_size(buffer_of(b, o).dtype);
    if (by > bytes) bytes = by, elems = e, dtype = buffer_of(b, o).dtype;
  }
  auto& [instrs, repeats, elements] = m.vector[{in.vop, in.op == Opcode::TREDUCE, dtype}];
  instrs += 1;
  repeats += ceil_div(bytes, 256);
  elements += elems;
}

Measured measure_kernel(const Program& p, const Kernel& k, const Target& t) {
  Measured m;
  const int workspace_tensor = k.uses_cube ? p.tasks[k.tasks.front()].bindings[2].tensor : -1;
  const bool has_epilogue = std::any_of(k.tasks.begin(), k.tasks.end(),
                                        [&](int id) { return k.uses_cube && p.tasks[id].core == CoreType::AIV; });
  for (int id : k.tasks) {
    const Task& task = p.tasks[id];
    const BlockProgram& b = p.blocks[task.block];
    (task.core == CoreType::AIC ? m.aic_tasks : task.core == CoreType::MIX ? m.mix_tasks : m.aiv_tasks) += 1;
    m.instructions += static_cast<int64_t>(b.instrs.size());
    m.loads_clear_of_stores = m.loads_clear_of_stores && loads_clear_of_stores(b);
    for (const auto& [level, bytes] : b.footprint()) m.footprint[level] = std::max(m.footprint[level], bytes);
    m.ub_addressed = std::max(m.ub_addressed, ub_addressed(b));
    auto local_bytes = [&](const Operand& o) {
      return static_cast<double>(num_elements(o.extent) * dtype_size(buffer_of(b, o).dtype));
    };
      bool mte2_loading = false;  // a TLOAD on the Cube task's MTE2 since its last SET_FLAG
    for (const Instr& in : b.instrs) {
      const bool mix = task.core == CoreType::MIX;
      const bool cube_side = task.core == CoreType::AIC || (mix && in.unit == 0);
      if (cube_side) ++m.aic_instructions;
      if (cube_side && in.pipe == Pipe::MTE2) {  // a SET_FLAG ends a group; a WAIT_FLAG does not
        if (in.op == Opcode::TLOAD && (mix || !mte2_loading)) ++m.aic_load_groups;
        if (in.op == Opcode::TLOAD || in.op == Opcode::SET_FLAG) mte2_loading = in.op == Opcode::TLOAD;
      }
      if (in.op == Opcode::TMOV && in.dst.level == MemLevel::UB && in.src[0].level == MemLevel::UB) {
        count_vector(b, in, m);
        continue;
      }
      switch (in.op) {
        case Opcode::TLOAD: {
          ++(cube_side ? m.aic_gm_loads : m.aiv_gm_loads);
          const double bytes = local_bytes(in.dst);
          m.gm_read += bytes;
          const int tensor = task.bindings[in.src[0].id].tensor;
          m.read_by_tensor[tensor] += bytes;
          m.tensor_bytes[tensor] =
              static_cast<double>(num_elements(p.tensors[tensor].shape) * dtype_size(p.tensors[tensor].dtype));
          if (has_epilogue && task.bindings[in.src[0].id].tensor == workspace_tensor) m.workspace += bytes;
          break;
        }
        case Opcode::TSTORE: {
          ++(cube_side ? m.aic_gm_stores : m.aiv_gm_stores);
          const DType gm = p.tensors[task.bindings[in.dst.id].tensor].dtype;
          const double bytes = static_cast<double>(num_elements(in.src[0].extent) * dtype_size(gm));
          m.gm_write += bytes;
          if (in.src[0].level == MemLevel::L0C) {
            m.l0c_out += bytes;
            if (has_epilogue) m.workspace += bytes;
          }
          break;
        }
        case Opcode::TMOV: {
          const double bytes = local_bytes(in.dst);
          if (in.src[0].level == MemLevel::L0C) m.l0c_out += bytes;
          if (in.dst.level == MemLevel::L0A || in.dst.level == MemLevel::L0B) {
            (in.dst.level == MemLevel::L0A ? m.l0a : m.l0b) += bytes;
          } else {
            const int side = cube_side || !mix ? 0 : 1, pipe = static_cast<int>(in.pipe);
            m.handoff_bytes[side][pipe] += bytes;
            m.handoff_moves[side][pipe] += 1;
          }
          break;
        }
        case Opcode::TMATMUL: {
          const auto it = t.fractal.find(buffer_of(b, in.src[0]).dtype);
          const Fractal f = it == t.fractal.end() ? Fractal{} : it->second;
          ++m.tmatmuls;
          m.fractals += ceil_div(in.dst.extent[0], f.m) * ceil_div(in.src[0].extent[1], f.k) *
                        ceil_div(in.dst.extent[1], f.n);
          break;
        }
        case Opcode::TVEC:
        case Opcode::TREDUCE:
        case Opcode::TFILL:
          count_vector(b, in, m);
          break;
        default:
          break;
      }
    }
  }
  return m;
}

void expect_agreement(const KernelSummary& s, const Measured& m, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(s.aic_tasks, m.aic_tasks);
  EXPECT_EQ(s.aiv_tasks, m.aiv_tasks);
  EXPECT_EQ(s.mix_tasks, m.mix_tasks);
  EXPECT_EQ(s.handoff_bytes, m.handoff_bytes);
  EXPECT_EQ(s.handoff_moves, m.handoff_moves);
  EXPECT_EQ(s.instructions, m.instructions);
  EXPECT_EQ(s.aic_instructions, m.aic_instructions);
  EXPECT_EQ(s.tmatmuls, m.tmatmuls);
  EXPECT_EQ(s.aic_gm_loads, m.aic_gm_loads);
  EXPECT_EQ(s.aic_load_groups, m.aic_load_groups);
  EXPECT_EQ(s.aic_gm_stores, m.aic_gm_stores);
  EXPECT_EQ(s.aiv_gm_loads, m.aiv_gm_loads);
  EXPECT_EQ(s.aiv_gm_stores, m.aiv_gm_stores);
  EXPECT_EQ(s.fractals, m.fractals);
  EXPECT_DOUBLE_EQ(s.gm_read_bytes, m.gm_read);
  EXPECT_DOUBLE_EQ(s.gm_write_bytes, m.gm_write);
  EXPECT_DOUBLE_EQ(s.l1_to_l0a_bytes, m.l0a);
  EXPECT_DOUBLE_EQ(s.l1_to_l0b_bytes, m.l0b);
  EXPECT_DOUBLE_EQ(s.l0c_out_bytes, m.l0c_out);
  EXPECT_DOUBLE_EQ(s.workspace_bytes, m.workspace);
  EXPECT_EQ(s.footprint, m.footprint);
  EXPECT_EQ(s.ub_addressed_bytes, m.ub_addressed);
  EXPECT_EQ(s.loads_clear_of_stores, m.loads_clear_of_stores);
  std::map<std::tuple<OpKind, bool, DType>, std::tuple<int64_t, int64_t, int64_t>> summarised;
  for (const VectorWork& w : s.vector_work) summarised[{w.op, w.reduce, w.dtype}] = {w.instrs, w.repeats, w.elements};
  EXPECT_EQ(summarised, m.vector);
  // Each tensor read once in `reads`, with the bytes the program loads from it; its
  // distinct bytes no more than that nor than the tensor.
  std::map<int, double> read_by_tensor;
  for (const TensorRead& r : s.reads) {
    EXPECT_EQ(read_by_tensor.count(r.tensor), 0u) << "tensor " << r.tensor << " listed twice";
    read_by_tensor[r.tensor] = r.bytes;
    EXPECT_GT(r.distinct_bytes, 0);
    EXPECT_LE(r.distinct_bytes, r.bytes);
    if (m.tensor_bytes.count(r.tensor)) {
      EXPECT_LE(r.distinct_bytes, m.tensor_bytes.at(r.tensor));
    }
  }
  EXPECT_EQ(read_by_tensor.size(), m.read_by_tensor.size());
  for (const auto& [tensor, bytes] : m.read_by_tensor) EXPECT_DOUBLE_EQ(read_by_tensor[tensor], bytes) << "tensor " << tensor;
  EXPECT_GE(s.touched_bytes, 0);
}

// ---- Random workloads and configs -------------------------------------------------------

Shape random_shape(const OpDef& op, std::mt19937& rng) {
  auto dim = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  if (op.name == "attention") return {dim(1, 2), dim(1, 2), dim(8, 96), 16 * dim(1, 4)};
  if (op.name == "flash_attention") return {dim(1, 2), dim(1, 4), dim(1, 150), dim(1, 300), dim(1, 160)};
  Shape s;
  for (size_t i = 0; i < op.dims.size(); ++i) s.push_back(op.dims[i] == "B" ? dim(1, 3) : dim(1, 300));
  return s;
}

int64_t pick(std::mt19937& rng, std::initializer_list<int64_t> options) {
  std::vector<int64_t> v(options);
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

CubeTile random_cube(std::mt19937& rng, int64_t align, bool split_k) {
  CubeTile c;
  c.mL0 = align * pick(rng, {1, 2, 4, 8});
  c.mL1 = c.mL0 * pick(rng, {1, 2});
  c.kL0 = align * pick(rng, {1, 2, 4});
  c.kAL1 = c.kL0 * pick(rng, {1, 2, 4});
  c.kBL1 = pick(rng, {0, 1}) ? c.kAL1 : c.kAL1 * pick(rng, {2, 4});
  if (pick(rng, {0, 1})) std::swap(c.kAL1, c.kBL1);
  c.nL0 = align * pick(rng, {1, 2, 4, 8});
  c.nL1 = c.nL0 * pick(rng, {1, 2});
  c.split_k = split_k;
  return c;
}

Shape random_vec(std::mt19937& rng, size_t rank, const Shape& widest) {
  Shape v(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dim = widest[i];
    v[i] = i + 1 == rank ? 16 * pick(rng, {1, 2, 4, 8, 16, 32}) : std::uniform_int_distribution<int64_t>(1, dim)(rng);
  }
  if (pick(rng, {0, 1})) v.back() = widest.back();  // often the whole row: reductions stay whole
  return v;
}

TileConfig random_config(std::mt19937& rng, const Workload& w, const TensorGraph& g) {
  if (w.op == "flash_attention") return pto::testing::random_attention_config(rng, w);
  TileConfig c;
  bool has_matmul = false, has_vector = false;
  size_t rank = 0;
  for (const Node& n : g.nodes()) {
    if (n.kind == OpKind::Matmul) has_matmul = true;
    if (n.kind != OpKind::Input && n.kind != OpKind::Matmul && !is_view(n.kind)) has_vector = true;
    rank = std::max(rank, n.shape.size());
  }
  Shape widest(rank, 1);
  for (const Node& n : g.nodes())
    for (size_t i = 0; i < n.shape.size(); ++i) {
      int64_t& x = widest[rank - n.shape.size() + i];
      x = std::max(x, n.shape[i]);
    }
  if (has_matmul) {
    const bool fp32_out = g.node(g.outputs()[0]).dtype == DType::F32 || g.node(g.outputs()[0]).dtype == DType::I32;
    c.cube = random_cube(rng, w.dtype == DType::I8 ? 32 : 16, w.op != "attention" && fp32_out && pick(rng, {0, 1}));
    if (pick(rng, {0, 1})) c.l2_group = std::make_pair(pick(rng, {1, 2, 3}), pick(rng, {1, 2}));
  }
  if (has_vector && pick(rng, {0, 1, 1})) c.vec = random_vec(rng, rank, widest);
  if (pick(rng, {0, 1})) c.reduce = pick(rng, {0, 1}) ? ReduceForm::Online : ReduceForm::Passes;
  c.nbuffer = static_cast<int>(pick(rng, {1, 2, 3}));
  if (pick(rng, {0, 0, 1})) {  // unfused: every compute node its own kernel
    std::vector<std::vector<int>> singles;
    for (NodeId id : g.compute_nodes()) singles.push_back({id});
    c.fusion = singles;
  }
  return c;
}

Workload random_workload(const OpDef& op, std::mt19937& rng) {
  Workload w;
  w.op = op.name;
  w.shape = random_shape(op, rng);
  w.dtype = op.dtypes[std::uniform_int_distribution<size_t>(0, op.dtypes.size() - 1)(rng)];
  pto::testing::draw_attrs(op, w, rng);
  if (w.op == "attention") w.dtype = DType::F16;
  return w;
}

// Compares analyze and compile on one config; returns whether it was feasible.
bool check_config(const Workload& w, const TensorGraph& g, const TileConfig& c, const Target& t,
                  const Analyzer& analyzer) {
  const std::string where = w.key() + " " + c.to_string() + " on " + t.name;
  const TilingSummary s = analyzer.analyze(c);
  if (!s.feasible) {
    try {
      compile(g, c, t);
      ADD_FAILURE() << where << ": analyze says infeasible, compile succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.category(), ErrorCategory::Infeasible) << where;
      EXPECT_NE(std::string(e.what()).find(format_violations(s.violations)), std::string::npos) << where;
    }
    return false;
  }
  const Compiled compiled = compile(g, c, t, CompileOptions{.dumps = true});
  const Program& p = compiled.program;
  EXPECT_EQ(s.instructions(), p.instruction_count()) << where;
  EXPECT_EQ(s.kernels.size(), p.kernels.size()) << where;
  if (s.kernels.size() != p.kernels.size()) return true;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelSummary& ks = s.kernels[i];
    EXPECT_EQ(ks.after, p.kernels[i].after) << where;
    EXPECT_EQ(ks.nodes, p.kernels[i].nodes) << where;
    EXPECT_EQ(ks.uses_cube, p.kernels[i].uses_cube) << where;
    expect_agreement(ks, measure_kernel(p, p.kernels[i], t), where + " kernel " + p.kernels[i].name);
  }
  // The tile dump lists the same violations (soft ones on the host).
  for (const Violation& v : s.violations)
    EXPECT_NE(compiled.tile_dump.find(v.detail), std::string::npos) << where << ": " << v.detail;
  return true;
}

void agreement_over_ops(const Target& t, int configs_per_op, uint32_t seed) {
  std::mt19937 rng(seed);
  for (const OpDef& op : op_library()) {
    int feasible = 0;
    for (int shape_round = 0; shape_round < 3; ++shape_round) {
      const Workload w = random_workload(op, rng);
      const TensorGraph g = build_graph(w);
      const Analyzer analyzer(g, t);
      check_config(w, g, default_config(w, g, t), t, analyzer);
      for (int i = 0; i < configs_per_op; ++i) feasible += check_config(w, g, random_config(rng, w, g), t, analyzer);
    }
    EXPECT_GT(feasible, 0) << op.name << " on " << t.name << ": no random config was feasible";
  }
}

TEST(AnalyzeAgreement, RandomConfigsOfEveryOpOnAscend910b1) {
  agreement_over_ops(load_target("ascend910b1"), 40, 1234);
}

TEST(AnalyzeAgreement, RandomConfigsOfEveryOpOnHost) { agreement_over_ops(load_target("host"), 25, 99); }

TEST(AnalyzeAgreement, SplitKAndL2GroupOnBatchMatmul) {
  const Target t = load_target("ascend910b1");
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    Workload w{"batch_matmul", {pick(rng, {1, 2}), pick(rng, {16, 40, 100}), pick(rng, {200, 520, 1000}), pick(rng, {16, 48})},
               DType::F32, {}};
    const TensorGraph g = build_graph(w);
    const Analyzer analyzer(g, t);
    TileConfig c;
    c.cube = random_cube(rng, 16, true);
    c.l2_group = std::make_pair(pick(rng, {1, 2}), pick(rng, {1, 2}));
    c.nbuffer = static_cast<int>(pick(rng, {1, 2}));
    check_config(w, g, c, t, analyzer);
  }
}

// ---- Properties of the summary itself ----------------------------------------------------

TEST(Analyze, MatmulTotalsFollowTheGuideFormula) {
  // MTE2 bytes = M*K*(N/nL1)*sizeof(A) + K*N*(M/mL1)*sizeof(B) for a divisible shape.
  const Target t = load_target("ascend910b1");
  const Workload w{"matmul", {256, 512, 1024}, DType::F16, {}};
  const TensorGraph g = build_graph(w);
  TileConfig c = TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})");
  const TilingSummary s = analyze(g, c, t);
  ASSERT_TRUE(s.feasible) << format_violations(s.violations);
  ASSERT_EQ(s.kernels.size(), 1u);
  const KernelSummary& k = s.kernels[0];
  EXPECT_DOUBLE_EQ(k.gm_read_bytes, 256.0 * 512 * (1024 / 256) * 2 + 512.0 * 1024 * (256 / 128) * 2);
  EXPECT_DOUBLE_EQ(k.useful_flops, 2.0 * 256 * 512 * 1024);
  EXPECT_EQ(k.fractals, (256 / 16) * (512 / 16) * (1024 / 16));
  EXPECT_EQ(k.aic_tasks, 2 * 4);
  EXPECT_EQ(k.k_steps, 2);
  EXPECT_EQ(k.tile_counts, (Shape{2, 4}));
  EXPECT_EQ(k.tail, (Shape{128, 256}));
}

TEST(Analyze, ReadsSplitFirstTouchesFromReReads) {
  // Matmul: each operand is read N/nL1 resp. M/mL1 times over, its distinct bytes once.
  const Target t = load_target("ascend910b1");
  const TensorGraph g = build_graph({"matmul", {256, 512, 1024}, DType::F16, {}});
  const TilingSummary s =
      analyze(g, TileConfig::parse(R"({"cube":{"m":[128,128],"k":[64,256],"n":[256,256]}})"), t);
  ASSERT_TRUE(s.feasible);
  const KernelSummary& k = s.kernels.at(0);
  ASSERT_EQ(k.reads.size(), 2u);
  for (const TensorRead& r : k.reads) {
    const bool a = r.tensor == k.cube_a;
    EXPECT_TRUE(a || r.tensor == k.cube_b);
    EXPECT_DOUBLE_EQ(r.distinct_bytes, a ? 256.0 * 512 * 2 : 512.0 * 1024 * 2);
    EXPECT_DOUBLE_EQ(r.bytes, r.distinct_bytes * (a ? 1024 / 256 : 256 / 128));
    EXPECT_FALSE(r.l2_resident);  // graph inputs start in HBM
  }
  EXPECT_DOUBLE_EQ(k.touched_bytes, 256.0 * 512 * 2 + 512.0 * 1024 * 2 + 256.0 * 1024 * 2);  // A, B, C (fp16)
}

TEST(Analyze, AnUnfusedIntermediateIsL2ResidentOnlyWhileItFits) {
  const Workload w{"gelu", {512, 1024}, DType::F32, {}};
  const TensorGraph g = build_graph(w);
  TileConfig unfused;
  unfused.vec = Shape{8, 1024};
  unfused.fusion.emplace();
  for (NodeId id : g.compute_nodes()) unfused.fusion->push_back({id});
  for (const int64_t l2 : {int64_t{192} << 20, int64_t{1} << 20}) {
    Target t = load_target("ascend910b1");
    t.l2_bytes = l2;  // the 2 MiB intermediates fit, or not
    const TilingSummary s = analyze(g, unfused, t);
    ASSERT_TRUE(s.feasible) << format_violations(s.violations);
    ASSERT_GT(s.kernels.size(), 1u);
    for (const TensorRead& r : s.kernels[0].reads) EXPECT_FALSE(r.l2_resident);
    // Every later kernel reads its producer's output, which is resident iff it fits.
    for (size_t i = 1; i < s.kernels.size(); ++i) {
      const auto& reads = s.kernels[i].reads;
      const bool any_resident =
          std::any_of(reads.begin(), reads.end(), [](const TensorRead& r) { return r.l2_resident; });
      EXPECT_EQ(any_resident, l2 > (4 << 20)) << "kernel " << i << ", L2 " << l2;
    }
  }
}

TEST(Analyze, InfeasibleConfigListsViolationsAndNoKernels) {
  const Target t = load_target("ascend910b1");
  const TensorGraph g = build_graph({"matmul", {512, 512, 512}, DType::F16, {}});
  const TilingSummary s = analyze(g, TileConfig::parse(R"({"cube":{"m":[256,256],"k":[64,256],"n":[256,256]}})"), t);
  EXPECT_FALSE(s.feasible);
  EXPECT_TRUE(s.kernels.empty());
  ASSERT_FALSE(s.violations.empty());
  EXPECT_EQ(s.violations[0].rule, "L0C capacity");
}

// The clusters' shares of a flash_attention kernel as the dispatcher sends tasks (each to
// the cluster free first): never below an even share or the longest task, within list
// scheduling's bound (an even share plus one task), and equal tasks in whole rounds.
TEST(Analyze, FlashAttentionTasksSpreadOverTheClustersAsDispatched) {
  const Target t = load_target("ascend910b1");
  const OpDef& op = find_op("flash_attention");
  std::mt19937 rng(31);
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 40; ++trial) {
    Workload w{op.name, {pick(rng, {1, 2}), pick(rng, {8, 16, 32}), std::uniform_int_distribution<int64_t>(64, 2048)(rng),
                         0, 64}, DType::F16, {}};
    w.shape[3] = w.shape[2] * pick(rng, {1, 2});
    w.attrs = {{"causal", pick(rng, {0, 1})}, {"kv_heads", pick(rng, {1, 2, 4})}, {"kv_dtype", static_cast<int64_t>(DType::F16)}};
    const TensorGraph g = build_graph(w);
    const TilingSummary s = analyze(g, pto::testing::random_attention_config(rng, w), t);
    if (!s.feasible) continue;
    const KernelSummary& k = s.kernels.front();
    SCOPED_TRACE(w.key());
    const double clusters = t.aic_cores, even = static_cast<double>(k.loop_steps) / clusters;
    EXPECT_GE(k.busiest_cluster_steps, std::max<int64_t>(std::ceil(even), k.longest_task_steps));
    EXPECT_LE(k.busiest_cluster_steps, even + k.longest_task_steps);
    EXPECT_GE(k.busiest_cluster_tasks, 1);
    EXPECT_LE(k.busiest_cluster_tasks, k.mix_tasks);
    if (k.loop_steps == k.mix_tasks * k.longest_task_steps) {  // equal tasks
      EXPECT_EQ(k.busiest_cluster_tasks, (k.mix_tasks + t.aic_cores - 1) / t.aic_cores);
      EXPECT_EQ(k.busiest_cluster_steps, k.busiest_cluster_tasks * k.longest_task_steps);
    }
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

TEST(Analyze, AnalyzerIsReusableAcrossConfigsAndFusionChoices) {
  const Target t = load_target("ascend910b1");
  const Workload w{"matmul_bias_gelu", {128, 64, 256}, DType::F16, {}};
  const TensorGraph g = build_graph(w);
  const Analyzer analyzer(g, t);
  TileConfig fused = default_config(w, g, t);
  TileConfig unfused = fused;
  std::vector<std::vector<int>> singles;
  for (NodeId id : g.compute_nodes()) singles.push_back({id});
  unfused.fusion = singles;
  const TilingSummary a = analyzer.analyze(fused), b = analyzer.analyze(unfused), a2 = analyzer.analyze(fused);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_LT(a.kernels.size(), b.kernels.size());
  EXPECT_EQ(a.instructions(), a2.instructions());
  double fused_bytes = 0, unfused_bytes = 0;
  for (const KernelSummary& k : a.kernels) fused_bytes += k.gm_read_bytes + k.gm_write_bytes - k.workspace_bytes;
  for (const KernelSummary& k : b.kernels) unfused_bytes += k.gm_read_bytes + k.gm_write_bytes;
  EXPECT_LT(fused_bytes, unfused_bytes);
}

}  // namespace
}  // namespace pto
