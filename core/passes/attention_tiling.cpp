// Pass 3 for flash_attention (see attention_tiling.h).
//
// Map: resolve() clamps the config's tiles to the workload; lay_out() places every
// buffer of the largest task (Cube unit, then each vector unit, then the workspace);
// check() applies the rules to what resolve() and lay_out() produced; the combine kernel
// of a split is a vector body built from a small graph of its own.
#include "core/passes/attention_tiling.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/passes/combine_kernel.h"
#include "core/passes/cube_layout.h"
#include "core/passes/gm_tensors.h"
#include "core/passes/number_text.h"
#include "core/passes/resolve_config.h"
#include "core/passes/ub_allocation.h"
#include "core/passes/vector_body.h"

namespace pto::passes {
namespace {

constexpr const char* kStages[] = {"c1", "v1", "c2", "v2"};

CubeTile stage_cube(const ResolvedConfig& rc, const char* stage) {
  const auto it = rc.stages.find(stage);
  return it != rc.stages.end() && it->second.cube ? *it->second.cube : *fallback_stage(stage).cube;
}

Shape stage_vec(const ResolvedConfig& rc, const char* stage) {
  const auto it = rc.stages.find(stage);
  return it != rc.stages.end() && it->second.vec ? *it->second.vec : *fallback_stage(stage).vec;
}

// An L0 size no larger than its block (kept aligned: the block rounded up).
int64_t clamp_l0(int64_t l0, int64_t block, int64_t align) { return std::min(l0, align_up(block, align)); }

class Tiler {
 public:
  Tiler(const AttentionSpec& s, const ResolvedConfig& rc, const Target& t, RuleCheck& check)
      : s_(s), rc_(rc), t_(t), check_(check) {}

  AttentionTiling run() {
    resolve();
    lay_out();
    check();
    return std::move(a_);
  }

 private:
  void resolve() {
    const AttentionTiles given = rc_.attention.value_or(fallback_attention());
    a_.q_tile = std::min(given.q_tile, s_.rows());
    a_.kv_tile = std::min(given.kv_tile, s_.skv);
    a_.order = given.order;
    a_.row_blocks = split_dim(s_.rows(), a_.q_tile);
    a_.kv_blocks = split_dim(s_.skv, a_.kv_tile);
    // No split may be left without a block: at most the fewest blocks a row block needs.
    int64_t fewest = a_.kv_blocks.count;
    for (int64_t rb = 0; rb < a_.row_blocks.count; ++rb)
      fewest = std::min(fewest, needed_kv_blocks(s_, a_.kv_tile, a_.kv_blocks.count, rb * a_.row_blocks.tile,
                                                 a_.row_blocks.extent(rb)));
    a_.splits = std::clamp<int64_t>(given.kv_split, 1, fewest);
    a_.units = t_.vector_units();
    a_.split_cores = t_.split_cores;
    a_.direct = t_.cv_direct || !t_.split_cores;
    a_.nbuffer = rc_.nbuffer.value_or(1);
    a_.preload = effective_preload(given.preload, a_.nbuffer);
    a_.fifo = a_.preload + 1;
    const int64_t align = cube_align(s_.in);
    const CubeTile c1 = stage_cube(rc_, "c1"), c2 = stage_cube(rc_, "c2");
    a_.qk = {clamp_l0(c1.mL0, a_.q_tile, align), clamp_l0(c1.kL0, s_.dim, align), clamp_l0(c1.nL0, a_.kv_tile, align)};
    a_.pv = {clamp_l0(c2.mL0, a_.q_tile, align), clamp_l0(c2.kL0, a_.kv_tile, align), clamp_l0(c2.nL0, s_.dim, align)};
    const int64_t unit_rows = a_.unit_rows(a_.q_tile);
    a_.v1_rows = std::min(stage_vec(rc_, "v1").front(), unit_rows);
    a_.v2_rows = std::min(stage_vec(rc_, "v2").front(), unit_rows);
  }

  static int64_t bytes_of(MemLevel level, DType dtype, Shape shape, Layout layout = Layout::RowMajor) {
    LocalBuffer probe;
    probe.level = level;
    probe.dtype = dtype;
    probe.shape = std::move(shape);
    probe.layout = layout;
    return probe.bytes();
  }

  // `slots` buffers "name[i]" (one: "name"), bump-allocated in their level of their unit.
  void add(const std::string& name, MemLevel level, int unit, DType dtype, Shape shape,
           Layout layout = Layout::RowMajor, int slots = 1) {
    std::vector<int>& ids = a_.slots[{name, unit}];
    for (int i = 0; i < slots; ++i) {
      ids.push_back(static_cast<int>(a_.buffers.size()));
      ClusterBuffer b;
      b.name = slots > 1 ? name + "[" + num(i) + "]" : name;
      b.level = level;
      b.unit = unit;
      b.dtype = dtype;
      b.shape = shape;
      b.layout = layout;
      b.bytes = bytes_of(level, dtype, shape, layout);
      int64_t& top = tops_[{static_cast<int>(level), unit}];
      b.offset = top;
      top = align_up(top + b.bytes, t_.align_bytes);
      a_.buffers.push_back(std::move(b));
    }
  }

  // The largest task's buffers: a unit's own pipelined ones with nbuffer slots, a block
  // handed between the Cube and the vector units (S, P, O_j and the rescale alpha, which
  // live from the softmax of block j to its PV and update, `preload` steps later) with
  // fifo slots where it lands: in the workspace, or direct in the consumer's buffer.
  void lay_out() {
    const int n = a_.nbuffer, f = a_.fifo, landing = a_.direct ? f : n;
    const int64_t rows = a_.q_tile, kv = a_.kv_tile, d = s_.dim;
    const DType in = s_.in;
    add("q.l1", MemLevel::L1, 0, in, {rows, d}, Layout::FractalA);
    add("k.l1", MemLevel::L1, 0, in, {d, kv}, Layout::FractalB, n);
    add("v.l1", MemLevel::L1, 0, in, {kv, d}, Layout::FractalB, n);
    add("p.l1", MemLevel::L1, 0, in, {rows, kv}, Layout::FractalA, landing);
    add("a.l0a", MemLevel::L0A, 0, in, {std::max(a_.qk.m, a_.pv.m), std::max(a_.qk.k, a_.pv.k)}, Layout::FractalA, n);
    add("b.l0b", MemLevel::L0B, 0, in, {std::max(a_.qk.k, a_.pv.k), std::max(a_.qk.n, a_.pv.n)}, Layout::FractalB, n);
    add("c.l0c", MemLevel::L0C, 0, DType::F32, {std::max(a_.qk.m, a_.pv.m), std::max(a_.qk.n, a_.pv.n)},
        Layout::RowMajor, n);
    const int64_t ur = a_.unit_rows(rows), v1 = a_.v1_rows, v2 = a_.v2_rows;
    for (int vu = 1; vu <= a_.units; ++vu) {
      const int u = a_.vector_unit(vu);
      // Direct hand-offs land in a unit's share of the block; through WS, a slice at a time.
      add("s.ub", MemLevel::UB, u, DType::F32, {a_.direct ? ur : v1, kv}, Layout::RowMajor, landing);
      add("x.ub", MemLevel::UB, u, DType::F32, {v1, kv});
      add("y.ub", MemLevel::UB, u, DType::F32, {v1, kv});
      add("p.ub", MemLevel::UB, u, in, {v1, kv}, Layout::RowMajor, n);
      add("m.ub", MemLevel::UB, u, DType::F32, {ur, 1}, Layout::RowMajor, 2);
      add("l.ub", MemLevel::UB, u, DType::F32, {ur, 1}, Layout::RowMajor, 2);
      add("alpha.ub", MemLevel::UB, u, DType::F32, {ur, 1}, Layout::RowMajor, f);
      for (const char* row : {"mc.ub", "drop.ub", "lc.ub", "ls.ub"}) add(row, MemLevel::UB, u, DType::F32, {v1, 1});
      add("pv.ub", MemLevel::UB, u, DType::F32, {a_.direct ? ur : v2, d}, Layout::RowMajor, landing);
      add("t.ub", MemLevel::UB, u, DType::F32, {v2, d});
      add("o.ub", MemLevel::UB, u, DType::F32, {ur, d});
      add("out.ub", MemLevel::UB, u, s_.in, {v2, d});
      if (s_.quantized()) add_dequant(u, a_.unit_rows(kv), d, n);
    }
    if (a_.direct) return;
    add("s.ws", MemLevel::WS, 0, DType::F32, {rows, kv}, Layout::RowMajor, f);
    add("p.ws", MemLevel::WS, 0, in, {rows, kv}, Layout::RowMajor, f);
    add("o.ws", MemLevel::WS, 0, DType::F32, {rows, d}, Layout::RowMajor, f);
    if (s_.quantized())
      for (const char* x : {"k.ws", "v.ws"}) add(x, MemLevel::WS, 0, in, {kv, d}, Layout::RowMajor, n);
  }

  // An int8 KV cache: each vector unit dequantizes its share of a block's tokens for K and
  // for V, dq_rows tokens at a time (int8 in, their 128-token scales, fp32 products, q's
  // dtype out): the whole share where it fits beside the unit's other buffers, else the
  // largest 16-token multiple that does (a 128 x 256 head of fp32 needs the chunks).
  void add_dequant(int u, int64_t share, int64_t d, int n) {
    if (a_.dq_rows == 0) a_.dq_rows = dequant_rows(share, d, n, tops_[{static_cast<int>(MemLevel::UB), u}]);
    for (const DequantBuffer& b : dequant_buffers(a_.dq_rows, d, n))
      add(b.name, MemLevel::UB, u, b.dtype, b.shape, Layout::RowMajor, b.slots);
  }

  struct DequantBuffer {
    std::string name;
    DType dtype;
    Shape shape;
    int slots;
  };
  // A unit's buffers for chunks of `tokens`: K's and V's int8 rows, scales (a chunk may
  // straddle a scale block) and rows in q's dtype, n slots each, and one fp32 scratch.
  std::vector<DequantBuffer> dequant_buffers(int64_t tokens, int64_t d, int n) const {
    std::vector<DequantBuffer> out;
    for (const std::string x : {"k", "v"}) {
      out.push_back({x + "q.ub", DType::I8, {tokens, d}, n});
      out.push_back({x + "s.ub", DType::F32, {1, ceil_div(tokens, kKvQuantBlock) + 1}, n});
      out.push_back({x + "h.ub", s_.in, {tokens, d}, n});
    }
    out.push_back({"dq.ub", DType::F32, {tokens, d}, 1});
    return out;
  }

  int64_t dequant_rows(int64_t share, int64_t d, int n, int64_t used) const {
    auto bytes = [&](int64_t tokens) {
      int64_t total = 0;
      for (const DequantBuffer& b : dequant_buffers(tokens, d, n))
        total += b.slots * align_up(bytes_of(MemLevel::UB, b.dtype, b.shape), t_.align_bytes);
      return total;
    };
    int64_t tokens = share;
    while (tokens > 16 && used + bytes(tokens) > t_.ub) tokens = align_up(ceil_div(tokens, 2), 16);
    return tokens;
  }

  void fail(const char* rule, const std::string& detail, bool hard) { check_.rule(rule, detail, hard); }

  int64_t footprint(MemLevel level, int unit) const {
    const auto it = tops_.find({static_cast<int>(level), unit});
    if (it == tops_.end()) return 0;
    int64_t peak = 0;
    for (const ClusterBuffer& b : a_.buffers)
      if (b.level == level && b.unit == unit) peak = std::max(peak, b.offset + b.bytes);
    return peak;
  }

  void capacity(const char* rule, MemLevel level, int unit, int64_t cap) {
    const int64_t need = footprint(level, unit);
    if (need <= cap) return;
    fail(rule, "flash_attention's " + std::string(mem_level_name(level)) + " buffers (q_tile " + num(a_.q_tile) +
                   ", kv_tile " + num(a_.kv_tile) + ", nbuffer " + num(a_.nbuffer) + ", preload " + num(a_.preload) +
                   (level == MemLevel::UB ? ", per vector unit" : "") + ") need " + num(need) + " B > " +
                   mem_level_name(level) + " " + num(cap) + " B",
         t_.hard_capacity);
  }

  void aligned(const char* what, int64_t v, int64_t whole) {
    const int64_t align = cube_align(s_.in);
    if (v % align == 0 || v >= whole) return;
    fail("attention alignment", std::string(what) + "=" + num(v) + " is not a multiple of " + num(align) +
                                    " and does not cover its dim (" + num(whole) + ")",
         t_.hard_capacity);
  }

  void check() {
    for (const auto& [name, tiles] : rc_.stages)
      if (std::find(std::begin(kStages), std::end(kStages), name) == std::end(kStages))
        usage_error("config stages: '" + name + "' is not a stage of flash_attention (stages: c1, v1, c2, v2)");
    aligned("q_tile", a_.q_tile, s_.rows());
    aligned("kv_tile", a_.kv_tile, s_.skv);
    const CubeTile c1 = stage_cube(rc_, "c1"), c2 = stage_cube(rc_, "c2");
    const std::pair<const char*, int64_t> l0s[] = {{"c1 mL0", c1.mL0}, {"c1 kL0", c1.kL0}, {"c1 nL0", c1.nL0},
                                                  {"c2 mL0", c2.mL0}, {"c2 kL0", c2.kL0}, {"c2 nL0", c2.nL0}};
    for (const auto& [name, v] : l0s) aligned(name, v, INT64_MAX);
    const Shape v1 = stage_vec(rc_, "v1"), v2 = stage_vec(rc_, "v2");
    if (v1.size() != 2 || v2.size() != 2)
      fail("vec tile rank", "flash_attention's v1 and v2 are [rows, cols]; got " + shape_str(v1) + " and " +
                                shape_str(v2), true);
    if (v1.back() < a_.kv_tile)
      fail("attention v1", "v1 " + shape_str(v1) + " cuts the KV block of " + num(a_.kv_tile) +
                               ": a block's softmax reads its rows whole", true);
    if (a_.direct && a_.v1_rows % 16 != 0 && a_.v1_rows < a_.unit_rows(a_.q_tile))
      fail("attention alignment", "v1 rows " + num(a_.v1_rows) + " are not a multiple of 16: a slice of P goes "
                                  "straight into the Cube's L1, in 16-row fractals", t_.hard_capacity);
    if (v2.back() < s_.dim)
      fail("attention v2", "v2 " + shape_str(v2) + " cuts the head dim " + num(s_.dim) +
                               ": the output update reads its rows whole", true);
    if (s_.quantized() && a_.kv_tile % kKvQuantBlock != 0 && a_.kv_tile < s_.skv)
      fail("attention int8 block", "kv_tile=" + num(a_.kv_tile) + " is not a multiple of the " +
                                       num(kKvQuantBlock) + "-token scale blocks of an int8 KV cache", true);
    // The vector units dequantize K(j + preload) before the Cube's QK of it, into one of
    // nbuffer slots that PV(j) still holds: a deeper preload waits on itself (the
    // simulator's deadlock, tests/core/attention_test.cpp).
    if (s_.quantized() && a_.preload > a_.nbuffer)
      fail("attention int8 preload", "preload " + num(a_.preload) + " runs QK more blocks ahead than the " +
                                         num(a_.nbuffer) + " slots (nbuffer) of the dequantized K and V blocks",
           true);
    capacity("L1 capacity", MemLevel::L1, 0, t_.l1);
    capacity("L0A capacity", MemLevel::L0A, 0, t_.l0a);
    capacity("L0B capacity", MemLevel::L0B, 0, t_.l0b);
    capacity("L0C capacity", MemLevel::L0C, 0, t_.l0c);
    for (int u = 1; u <= a_.units; ++u) capacity("UB capacity", MemLevel::UB, a_.vector_unit(u), t_.ub);
  }

  const AttentionSpec& s_;
  const ResolvedConfig& rc_;
  const Target& t_;
  RuleCheck& check_;
  AttentionTiling a_;
  std::map<std::pair<int, int>, int64_t> tops_;  // (level, unit) -> next free byte
};

// O = sum_s exp(m_s - M) O_s / sum_s exp(m_s - M) l_s, M = max_s m_s, over the splits s:
// a small graph whose vector body the combine kernel runs.
TensorGraph combine_graph(const AttentionSpec& s, int64_t splits) {
  const int64_t bk = s.batch * s.kv_heads, rows = s.rows();
  GraphBuilder b;
  const NodeId o = b.input("o.part", {bk, splits, rows, s.dim}, DType::F32);
  const NodeId m = b.input("m.part", {bk, splits, rows, 1}, DType::F32);
  const NodeId l = b.input("l.part", {bk, splits, rows, 1}, DType::F32);
  const NodeId top = b.amax(m, 1, true, "m.all");
  const NodeId w = b.exp(b.sub(m, top, "m.gap"), "w");
  const NodeId sum = b.sum(b.mul(w, l, "wl"), 1, true, "l.all");
  const NodeId o_all = b.sum(b.mul(o, w, "wo"), 1, true, "o.all");
  NodeId y = b.div(o_all, sum, "o.final");
  if (s.in != DType::F32) y = b.cast(y, s.in, "out.cast");
  b.mark_output(y);
  return b.build();
}

}  // namespace

int64_t needed_kv_blocks(const AttentionSpec& s, int64_t kv_tile, int64_t kv_blocks, int64_t row0, int64_t rows) {
  if (!s.causal) return kv_blocks;
  const bool wraps = rows >= s.sq || row0 % s.sq + rows > s.sq;
  const int64_t last_p = wraps ? s.sq - 1 : (row0 + rows - 1) % s.sq;
  return std::min(kv_blocks, (last_p + s.skv - s.sq) / kv_tile + 1);
}

AttentionTiles fallback_attention() { return AttentionTiles{128, 256, 1, TaskOrder::Bhq, std::nullopt}; }

StageTiles fallback_stage(const std::string& stage) {
  StageTiles t;
  CubeTile c;
  c.k_short_form = true;
  if (stage == "c1") {
    c.mL0 = c.mL1 = 128, c.kL0 = 64, c.kAL1 = c.kBL1 = 128, c.nL0 = 128, c.nL1 = 256;
    t.cube = c;
  } else if (stage == "c2") {
    c.mL0 = c.mL1 = 128, c.kL0 = 128, c.kAL1 = c.kBL1 = 256, c.nL0 = c.nL1 = 128;
    t.cube = c;
  } else {
    t.vec = Shape{16, stage == "v1" ? 256 : 128};
  }
  return t;
}

AttentionTiling tile_attention(const AttentionSpec& spec, const ResolvedConfig& rc, const Target& target,
                               RuleCheck& check) {
  return Tiler(spec, rc, target, check).run();
}

TiledKernel split_combine_kernel(const AttentionSpec& spec, AttentionTiling& tiling, int attention_kernel,
                                 size_t tensor_count, const std::vector<GmTensor>& tensors, TilePlan& plan,
                                 const Target& target, RuleCheck& check) {
  const TensorGraph g = combine_graph(spec, tiling.splits);
  const GmTensors own = gm_tensors(g);
  // The partials and the output's view [B*KVH, 1, rows, D] join the program's tensors.
  const int first = static_cast<int>(tensor_count + plan.extra_tensors.size());
  tiling.first_extra_tensor = first;
  std::vector<int> program_id(own.tensors.size(), -1);
  for (int input = 0; input < 3; ++input) {
    GmTensor t = own.tensors[input];
    t.id = first + input;
    t.role = TensorRole::Intermediate;
    t.io_index = -1;
    program_id[input] = t.id;
    plan.extra_tensors.push_back(t);
  }
  GmTensor out = tensors[spec.out];
  out.id = first + 3;
  out.name += ".combined";
  out.shape = {spec.batch * spec.kv_heads, 1, spec.rows(), spec.dim};
  out.alias_of = spec.out;
  out.strides = contiguous_strides(out.shape);
  out.role = TensorRole::Intermediate;
  out.io_index = -1;
  plan.extra_tensors.push_back(out);
  program_id[g.outputs().front()] = out.id;

  return combine_kernel(g, program_id, 1, attention_kernel, target, check);  // dim 1: the splits
}

}  // namespace pto::passes
