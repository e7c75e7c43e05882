// core::analyze — the closed-form tiling summary.
//
// It runs the same passes as compile() up to tile expansion (resolve_config, the
// fusion partition — built once per graph and fusion choice — and expand_tiles), then
// counts what codegen would emit without emitting it. The tiles of a kernel fall into
// a few classes per dim (full tiles and the tail; for split-K the full chunks and the
// last one; for an epilogue the sub-tiles of full and tail Cube tiles), and every
// count is a per-class formula times the class size. The formulas mirror
// codegen_cube.cpp and codegen_vector.cpp instruction by instruction; the agreement
// test (tests/core/analyze_test.cpp) holds them to it. Kernels whose tasks loop inside
// (split reductions) are counted from their own codegen instead: it emits the few
// chunks that differ and one of each class of identical chunks, and the counter
// tallies those instructions times the class size.
#include "core/analyze.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <queue>
#include <set>

#include "core/size_limits.h"
#include "core/passes/codegen_attention.h"
#include "core/passes/codegen_stream.h"
#include "core/passes/codegen_vector.h"
#include "core/passes/fusion_partition.h"
#include "core/passes/resolve_config.h"
#include "core/passes/tile_expansion.h"

namespace pto {

std::string format_violations(const std::vector<Violation>& v) {
  std::string out;
  for (const Violation& x : v) {
    if (!out.empty()) out += '\n';
    out += x.rule;
    out += ": ";
    out += x.detail;
  }
  return out;
}

int64_t TilingSummary::instructions() const {
  int64_t n = 0;
  for (const KernelSummary& k : kernels) n += k.instructions;
  return n;
}

int64_t TilingSummary::tasks() const {
  int64_t n = 0;
  for (const KernelSummary& k : kernels) n += k.aic_tasks + k.aiv_tasks + k.mix_tasks;
  return n;
}

bool TilingSummary::within_program_limits() const {
  return tasks() <= kMaxTasks && instructions() <= kMaxInstructions;
}

namespace {

using passes::CubeSpec;
using passes::CubeTiling;
using passes::DimSplit;
using passes::GmAccess;
using passes::TiledKernel;
using passes::VectorBody;

constexpr int64_t kVectorRepeatBytes = 256;

// Extents a dim's tiles take and how many tiles take each (at most two classes).
struct ExtentClasses {
  int n = 0;
  int64_t extent[2] = {0, 0};
  int64_t count[2] = {0, 0};
  void add(int64_t e, int64_t c) {
    if (c <= 0) return;
    for (int i = 0; i < n; ++i)
      if (extent[i] == e) {
        count[i] += c;
        return;
      }
    extent[n] = e;
    count[n++] = c;
  }
};

ExtentClasses classes_of(const DimSplit& d) {
  ExtentClasses c;
  c.add(d.tile, d.count - 1);
  c.add(d.tail, 1);
  return c;
}

int64_t spanned_elements(passes::DimMask mask, const Shape& ext) {
  int64_t n = 1;
  for (size_t d = 0; d < ext.size(); ++d)
    if (passes::spans(mask, static_cast<int>(d))) n *= ext[d];
  return n;
}

// Σ over L0 pieces of an extent of ceil(piece / fractal).
int64_t fractal_pieces(int64_t extent, int64_t l0, int64_t fractal) {
  return (extent / l0) * ceil_div(l0, fractal) + ceil_div(extent % l0, fractal);
}

Fractal fractal_of(const Target& t, DType in) {
  const auto it = t.fractal.find(in);
  return it == t.fractal.end() ? Fractal{} : it->second;
}

class KernelCounter {
 public:
  KernelCounter(const Target& t, KernelSummary& out) : t_(t), out_(out) {}

  // `count` vector tasks of tile extents `ext`.
  void vector_tasks(const VectorBody& body, const Shape& ext, int64_t count, int workspace_tensor) {
    const int64_t loads = static_cast<int64_t>(body.loads.size());
    const int64_t stores = static_cast<int64_t>(body.stores.size());
    const int64_t per_task = loads + static_cast<int64_t>(body.steps.size()) + stores + (loads ? 2 : 0) +
                             (stores ? 2 : 0);
    out_.instructions += count * per_task;
    out_.aiv_gm_loads += count * loads;
    out_.aiv_gm_stores += count * stores;
    for (const GmAccess& a : body.loads) {
      const double bytes = static_cast<double>(count * gm_bytes(body, a, ext));
      out_.gm_read_bytes += bytes;
      add_read(a.tensor, bytes);
      if (a.tensor == workspace_tensor) out_.workspace_bytes += bytes;
    }
    for (const GmAccess& a : body.stores) out_.gm_write_bytes += static_cast<double>(count * gm_bytes(body, a, ext));
    for (const passes::VecStep& s : body.steps) vector_step(body, s, ext, count);
  }

  // `count` times the instructions of `b` from `from` on, run by tasks whose GM binding
  // slot i is tensor slot_tensor[i]. In a MIX block unit 0 is the Cube core, the rest
  // its vector cores.
  void instructions(const BlockProgram& b, size_t from, const std::vector<int>& slot_tensor, int64_t count) {
    const auto c = static_cast<double>(count);
    const bool mix = b.core == CoreType::MIX;
    for (size_t i = from; i < b.instrs.size(); ++i) {
      const Instr& in = b.instrs[i];
      const bool cube_side = mix && in.unit == 0;
      out_.instructions += count;
      if (cube_side) out_.aic_instructions += count;
      switch (in.op) {
        case Opcode::TLOAD: {
          const double bytes = c * static_cast<double>(operand_bytes(b, in.dst));
          (cube_side ? out_.aic_gm_loads : out_.aiv_gm_loads) += count;
          if (cube_side) out_.aic_load_groups += count;
          out_.gm_read_bytes += bytes;
          add_read(slot_tensor[in.src[0].id], bytes);
          break;
        }
        case Opcode::TSTORE:
          (cube_side ? out_.aic_gm_stores : out_.aiv_gm_stores) += count;
          out_.gm_write_bytes +=
              c * static_cast<double>(num_elements(in.src[0].extent) * dtype_size(tensor_dtype(slot_tensor[in.dst.id])));
          break;
        case Opcode::TMOV: move(b, in, cube_side || !mix, c); break;
        case Opcode::TMATMUL: matmul(b, in, count); break;
        case Opcode::TVEC:
        case Opcode::TREDUCE:
        case Opcode::TFILL: vector_instr(b, in, count); break;
        default: break;
      }
    }
  }

  // `count` Cube tasks of an [m, n] tile over a K range of k.
  void cube_tasks(const CubeSpec& s, const CubeTiling& ct, int64_t m, int64_t n, int64_t k, int64_t count) {
    const int64_t steps = ceil_div(k, ct.k_step);
    const int64_t last = k - (steps - 1) * ct.k_step;
    const int64_t loads_a = ceil_div(steps, ct.ra), loads_b = ceil_div(steps, ct.rb);
    const int64_t mi = ceil_div(m, ct.mL0), ni = ceil_div(n, ct.nL0);
    const int64_t kk = (steps - 1) * ceil_div(ct.k_step, ct.kL0) + ceil_div(last, ct.kL0);
    const int64_t j = mi * ni * kk;
    // Per task: the TLOADs, each TMATMUL with its two TMOVs, one TSTORE, and the flags
    // that order them (SET + WAIT per hand-off; buffer reuse past a level's slots).
    const int64_t flags = 2 * std::max<int64_t>(0, loads_a - ct.a_slots) + 2 * std::max<int64_t>(0, loads_b - ct.b_slots) +
                          2 * steps + 2 * j + 2 * std::max<int64_t>(0, j - ct.l0_slots) + 2;
    const int64_t per_task = loads_a + loads_b + 3 * j + 1 + flags;
    const int64_t in = dtype_size(s.in), out = dtype_size(s.out);
    const Fractal f = fractal_of(t_, s.in);
    const int64_t fk = (steps - 1) * fractal_pieces(ct.k_step, ct.kL0, f.k) + fractal_pieces(last, ct.kL0, f.k);
    const auto c = static_cast<double>(count);
    out_.instructions += count * per_task;
    out_.aic_instructions += count * per_task;
    out_.aic_gm_loads += count * (loads_a + loads_b);
    out_.aic_load_groups += count * std::max(loads_a, loads_b);
    out_.aic_gm_stores += count;
    out_.tmatmuls += count * j;
    out_.fractals += count * fractal_pieces(m, ct.mL0, f.m) * fractal_pieces(n, ct.nL0, f.n) * fk;
    out_.gm_read_bytes += c * static_cast<double>((m + n) * k * in);
    add_read(s.a, c * static_cast<double>(m * k * in));
    add_read(s.b, c * static_cast<double>(n * k * in));
    out_.l1_to_l0a_bytes += c * static_cast<double>(ni * m * k * in);
    out_.l1_to_l0b_bytes += c * static_cast<double>(mi * n * k * in);
    out_.gm_write_bytes += c * static_cast<double>(m * n * out);
    out_.l0c_out_bytes += c * static_cast<double>(m * n * out);
  }

 private:
  void add_read(int tensor, double bytes) {
    for (TensorRead& r : out_.reads)
      if (r.tensor == tensor) {
        r.bytes += bytes;
        return;
      }
    out_.reads.push_back({tensor, bytes, 0, false});
  }

  int64_t gm_bytes(const VectorBody& body, const GmAccess& a, const Shape& ext) const {
    return spanned_elements(a.mask, ext) * dtype_size(body.values[a.value].dtype);
  }

  // L1 -> L0A/L0B feeds the Cube; L0C out by FIX; any move between the Cube's and the
  // vector units' memories (through WS or direct) is a hand-off; UB -> UB is vector work.
  void move(const BlockProgram& b, const Instr& in, bool cube_side, double c) {
    const MemLevel from = in.src[0].level, to = in.dst.level;
    const double bytes = c * static_cast<double>(operand_bytes(b, in.dst));
    if (from == MemLevel::UB && to == MemLevel::UB) return vector_instr(b, in, static_cast<int64_t>(c));
    if (to == MemLevel::L0A) out_.l1_to_l0a_bytes += bytes;
    if (to == MemLevel::L0B) out_.l1_to_l0b_bytes += bytes;
    if (from == MemLevel::L0C) out_.l0c_out_bytes += bytes;
    if (to == MemLevel::L0A || to == MemLevel::L0B) return;
    const int side = cube_side ? 0 : 1, pipe = static_cast<int>(in.pipe);
    out_.handoff_bytes[side][pipe] += bytes;
    out_.handoff_moves[side][pipe] += static_cast<int64_t>(c);
  }

  void matmul(const BlockProgram& b, const Instr& in, int64_t count) {
    const Fractal f = fractal_of(t_, b.buffers[in.src[0].id].dtype);
    const int64_t m = in.dst.extent[in.dst.extent.size() - 2], n = in.dst.extent.back(), k = in.src[0].extent.back();
    out_.tmatmuls += count;
    out_.fractals += count * ceil_div(m, f.m) * ceil_div(k, f.k) * ceil_div(n, f.n);
  }

  static int64_t operand_bytes(const BlockProgram& b, const Operand& o) {
    return num_elements(o.extent) * dtype_size(b.buffers[o.id].dtype);
  }
  DType tensor_dtype(int tensor) const { return (*tensors_)[tensor].dtype; }

  // The widest UB operand sets the repeats and the dtype, as for a body step.
  void vector_instr(const BlockProgram& b, const Instr& in, int64_t count) {
    int64_t bytes = 0, elems = 0;
    DType dtype = DType::F32;
    auto consider = [&](const Operand& o) {
      if (o.level != MemLevel::UB) return;
      const int64_t by = operand_bytes(b, o);
      if (by <= bytes) return;
      bytes = by;
      elems = num_elements(o.extent);
      dtype = b.buffers[o.id].dtype;
    };
    consider(in.dst);
    for (const Operand& o : in.src) consider(o);
    add_vector_work(in.vop, in.op == Opcode::TREDUCE, dtype, count, count * ceil_div(bytes, kVectorRepeatBytes),
                    count * elems);
  }

  void add_vector_work(OpKind op, bool reduce, DType dtype, int64_t instrs, int64_t repeats, int64_t elements) {
    VectorWork* w = nullptr;
    for (VectorWork& x : out_.vector_work)
      if (x.op == op && x.reduce == reduce && x.dtype == dtype) w = &x;
    if (!w) {
      out_.vector_work.push_back({op, reduce, dtype, 0, 0, 0});
      w = &out_.vector_work.back();
    }
    w->instrs += instrs;
    w->repeats += repeats;
    w->elements += elements;
  }

  // The widest UB operand sets the repeats and the dtype (as the simulator times it).
  void vector_step(const VectorBody& body, const passes::VecStep& s, const Shape& ext, int64_t count) {
    int64_t bytes = 0, elems = 0;
    DType dtype = DType::F32;
    auto consider = [&](int value) {
      const passes::VecValue& v = body.values[value];
      const int64_t e = spanned_elements(v.mask, ext);
      if (e * dtype_size(v.dtype) <= bytes) return;
      bytes = e * dtype_size(v.dtype);
      elems = e;
      dtype = v.dtype;
    };
    consider(s.dst);
    for (int v : s.src) consider(v);
    add_vector_work(s.vop, s.op == Opcode::TREDUCE, dtype, count, count * ceil_div(bytes, kVectorRepeatBytes),
                    count * elems);
  }

  const Target& t_;
  KernelSummary& out_;
  const std::vector<GmTensor>* tensors_ = nullptr;

 public:
  void set_tensors(const std::vector<GmTensor>& tensors) { tensors_ = &tensors; }
};

// Whether a streamed kernel's chunk `slot` of input `value` is ever loaded: chunk c of
// pass p loads into slot (p * chunks + c) % n, in the passes that read the input.
bool stream_slot_used(const passes::VecTiling& v, const VectorBody& body, int value, int slot, int nbuffer) {
  const passes::StreamPlan& plan = *v.stream;
  for (size_t p = 0; p < plan.passes.size(); ++p) {
    bool loads = false;
    for (int l : plan.passes[p].loads) loads = loads || body.loads[l].value == value;
    if (!loads) continue;
    for (int64_t c = 0; c < std::min<int64_t>(v.chunks.count, nbuffer); ++c)
      if ((static_cast<int64_t>(p) * v.chunks.count + c) % nbuffer == slot) return true;
  }
  return false;
}

void fill_footprint(const TiledKernel& k, KernelSummary& out) {
  const int nbuffer = k.nbuffer;
  for (int l = 0; l < passes::kNumLevels; ++l)
    if (k.footprint[l] > 0) out.footprint[static_cast<MemLevel>(l)] = k.footprint[l];
  std::vector<std::pair<int64_t, int64_t>> named;  // all that the instructions name
  for (const passes::UbBuffer& b : k.vec.buffers) {
    const bool streamed_load = k.vec.stream && b.value >= 0 && b.pass < 0 && b.slot < nbuffer &&
                               k.body->values[b.value].kind == passes::ValueKind::Load &&
                               passes::spans(k.body->values[b.value].mask, k.vec.stream->dim);
    const bool is_named = streamed_load ? stream_slot_used(k.vec, *k.body, b.value, b.slot, nbuffer)
                                        : b.slot == 0 || k.vec.stream;
    if (is_named) named.emplace_back(b.offset, b.offset + b.bytes);
  }
  out.ub_addressed_bytes = union_bytes(std::move(named));
}

// No value a task stores shares UB bytes with a value it loads (the allocator reuses
// bytes by liveness), so the next task's loads need not wait for this one's stores.
bool loads_clear_of_stores(const TiledKernel& k) {
  if (!k.body) return true;
  auto buffers_of = [&](const std::vector<passes::GmAccess>& accesses) {
    std::vector<const passes::UbBuffer*> out;
    for (const passes::UbBuffer& b : k.vec.buffers)
      for (const passes::GmAccess& a : accesses)
        if (a.value == b.value) out.push_back(&b);
    return out;
  };
  for (const passes::UbBuffer* stored : buffers_of(k.body->stores))
    for (const passes::UbBuffer* loaded : buffers_of(k.body->loads))
      if (byte_ranges_overlap(stored->offset, stored->bytes, loaded->offset, loaded->bytes)) return false;
  return true;
}

// `count` streamed tasks of tile extents `ext`: the prologue, each pass's classes of
// chunks, what runs between passes and the epilogue, emitted and tallied.
void count_stream_tasks(const TiledKernel& k, const Shape& ext, int64_t count, const std::vector<int>& slot_tensor,
                        KernelCounter& counter) {
  BlockProgram scratch;
  passes::StreamEmitter emit(*k.body, k.vec, ext, k.nbuffer, scratch);
  auto tally = [&](int64_t times) {
    counter.instructions(scratch, 0, slot_tensor, times);
    scratch.instrs.clear();
  };
  emit.prologue();
  tally(count);
  for (int p = 0; p < static_cast<int>(k.vec.stream->passes.size()); ++p) {
    for (const auto& [c, n] : emit.chunk_classes(p)) {
      emit.chunk(p, c);
      tally(count * n);
    }
    emit.after_pass(p);
    tally(count);
  }
  emit.epilogue();
  tally(count);
}

void summarise_vector(const TiledKernel& k, KernelCounter& counter, KernelSummary& out,
                      const std::vector<GmTensor>& tensors) {
  const std::vector<DimSplit>& dims = k.vec.dims;
  const size_t rank = dims.size();
  out.iteration = k.body->iteration;
  out.tile.resize(rank);
  out.tile_counts.resize(rank);
  out.tail.resize(rank);
  std::vector<ExtentClasses> classes(rank);
  for (size_t d = 0; d < rank; ++d) {
    out.tile[d] = dims[d].tile;
    out.tile_counts[d] = dims[d].count;
    out.tail[d] = dims[d].tail;
    classes[d] = classes_of(dims[d]);
  }
  out.aiv_tasks = num_elements(out.tile_counts);
  std::vector<int> slot_tensor;
  if (k.vec.stream) {
    out.tile[k.vec.stream->dim] = k.vec.chunks.tile;
    out.stream_dim = k.vec.stream->dim;
    out.stream_chunks = k.vec.chunks.count;
    out.stream_passes = static_cast<int64_t>(k.vec.stream->passes.size());
    for (const TensorBinding& b : passes::vector_bindings(*k.body, Shape(rank, 0), tensors)) slot_tensor.push_back(b.tensor);
  }
  // Odometer over the per-dim classes.
  std::vector<int> pick(rank, 0);
  Shape ext(rank);
  for (;;) {
    int64_t count = 1;
    for (size_t d = 0; d < rank; ++d) {
      ext[d] = classes[d].extent[pick[d]];
      count *= classes[d].count[pick[d]];
    }
    if (k.vec.stream) {
      count_stream_tasks(k, ext, count, slot_tensor, counter);
    } else {
      counter.vector_tasks(*k.body, ext, count, -1);
    }
    size_t d = rank;
    while (d > 0 && ++pick[d - 1] == classes[d - 1].n) pick[--d] = 0;
    if (d == 0) break;
  }
}

void summarise_cube(const passes::Partition& p, const TiledKernel& k, KernelCounter& counter, KernelSummary& out) {
  const CubeSpec& s = *p.kernels[k.spec].cube;
  const CubeTiling& ct = k.cube;
  out.uses_cube = true;
  out.iteration = s.batch;
  out.iteration.push_back(s.m);
  out.iteration.push_back(s.n);
  const size_t r = out.iteration.size();
  out.tile.assign(r, 1);
  out.tail.assign(r, 1);
  out.tile_counts = s.batch;
  out.tile_counts.push_back(ct.m.count);
  out.tile_counts.push_back(ct.n.count);
  out.tile[r - 2] = ct.mL1;
  out.tile[r - 1] = ct.nL1;
  out.tail[r - 2] = ct.m.tail;
  out.tail[r - 1] = ct.n.tail;
  out.k_steps = ct.chunk_steps;
  out.l0_slots = ct.l0_slots;
  out.split_k = ct.chunks;
  out.atomic_split_k = ct.chunks > 1 && ct.partials < 0;
  out.useful_flops = 2.0 * static_cast<double>(ct.batch) * static_cast<double>(s.m) * static_cast<double>(s.n) *
                     static_cast<double>(s.k);
  out.aic_tasks = ct.batch * ct.m.count * ct.n.count * ct.chunks;
  out.cube_a = s.a;
  out.cube_b = s.b;
  out.cube_out = s.c;

  const ExtentClasses ms = classes_of(ct.m), ns = classes_of(ct.n);
  ExtentClasses ks;
  ks.add(ct.chunk_k(0, s.k), ct.chunks - 1);
  ks.add(ct.chunk_k(ct.chunks - 1, s.k), 1);
  for (int a = 0; a < ms.n; ++a)
    for (int b = 0; b < ns.n; ++b)
      for (int c = 0; c < ks.n; ++c)
        counter.cube_tasks(s, ct, ms.extent[a], ns.extent[b], ks.extent[c],
                           ct.batch * ms.count[a] * ns.count[b] * ks.count[c]);
  out.workspace_bytes = 0;
  if (k.body->empty()) return;

  // The epilogue: each Cube tile's vec sub-tiles, classed per dim.
  out.workspace_bytes = out.gm_write_bytes;
  const Shape& vt = k.vec.tile;
  Shape ext(r, 1);
  for (int a = 0; a < ms.n; ++a)
    for (int b = 0; b < ns.n; ++b) {
      const ExtentClasses rows = classes_of(passes::split_dim(ms.extent[a], vt[r - 2]));
      const ExtentClasses cols = classes_of(passes::split_dim(ns.extent[b], vt[r - 1]));
      for (int i = 0; i < rows.n; ++i)
        for (int j = 0; j < cols.n; ++j) {
          const int64_t count = ct.batch * ms.count[a] * ns.count[b] * rows.count[i] * cols.count[j];
          ext[r - 2] = rows.extent[i];
          ext[r - 1] = cols.extent[j];
          out.aiv_tasks += count;
          counter.vector_tasks(*k.body, ext, count, s.c);
        }
    }
}

// `times` a tally of some instructions (counted into a summary of its own) into `into`.
void accumulate(KernelSummary& into, const KernelSummary& from, int64_t times) {
  const auto c = static_cast<double>(times);
  into.instructions += times * from.instructions;
  into.aic_instructions += times * from.aic_instructions;
  into.aic_gm_loads += times * from.aic_gm_loads;
  into.aic_load_groups += times * from.aic_load_groups;
  into.aic_gm_stores += times * from.aic_gm_stores;
  into.aiv_gm_loads += times * from.aiv_gm_loads;
  into.aiv_gm_stores += times * from.aiv_gm_stores;
  into.tmatmuls += times * from.tmatmuls;
  into.fractals += times * from.fractals;
  into.gm_read_bytes += c * from.gm_read_bytes;
  into.gm_write_bytes += c * from.gm_write_bytes;
  into.l1_to_l0a_bytes += c * from.l1_to_l0a_bytes;
  into.l1_to_l0b_bytes += c * from.l1_to_l0b_bytes;
  into.l0c_out_bytes += c * from.l0c_out_bytes;
  for (int side = 0; side < 2; ++side)
    for (int p = 0; p < kNumPipes; ++p) {
      into.handoff_bytes[side][p] += c * from.handoff_bytes[side][p];
      into.handoff_moves[side][p] += times * from.handoff_moves[side][p];
    }
  for (const TensorRead& r : from.reads) {
    auto it = std::find_if(into.reads.begin(), into.reads.end(), [&](const TensorRead& x) { return x.tensor == r.tensor; });
    if (it == into.reads.end()) it = into.reads.insert(into.reads.end(), {r.tensor, 0, 0, false});
    it->bytes += c * r.bytes;
  }
  for (const VectorWork& w : from.vector_work) {
    auto it = std::find_if(into.vector_work.begin(), into.vector_work.end(), [&](const VectorWork& x) {
      return x.op == w.op && x.reduce == w.reduce && x.dtype == w.dtype;
    });
    if (it == into.vector_work.end()) it = into.vector_work.insert(into.vector_work.end(), {w.op, w.reduce, w.dtype, 0, 0, 0});
    it->instrs += times * w.instrs;
    it->repeats += times * w.repeats;
    it->elements += times * w.elements;
  }
}

// Query-key pairs a row can see, over all rows (causal: those left of the diagonal).
double visible_pairs(const passes::AttentionSpec& s) {
  if (!s.causal) return static_cast<double>(s.sq) * static_cast<double>(s.skv);
  double pairs = 0;
  for (int64_t p = 0; p < s.sq; ++p) pairs += static_cast<double>(std::min(s.skv, p + s.skv - s.sq + 1));
  return pairs;
}

// flash_attention: its tasks grouped by block key; each group's steps counted once per
// step key (attention's codegen says which steps count alike) and multiplied.

// The distinct UB byte ranges the instructions of `b` name.
std::vector<std::pair<int64_t, int64_t>> ub_ranges(const BlockProgram& b) {
  std::vector<std::pair<int64_t, int64_t>> named;
  auto add = [&](const Operand& o) {
    if (o.level != MemLevel::UB) return;
    const LocalBuffer& x = b.buffers[o.id];
    named.emplace_back(x.byte_offset, x.byte_offset + x.bytes());
  };
  for (const Instr& in : b.instrs) {
    add(in.dst);
    for (const Operand& o : in.src) add(o);
  }
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  return named;
}

// A step key's tally and the UB ranges its instructions name: steps alike name the
// same buffer slots, so a task's UB is the union over its distinct steps.
struct AttentionStep {
  KernelSummary tally;
  std::vector<std::pair<int64_t, int64_t>> ub;
};

// The tasks as the dispatcher spreads them: each, in dispatch order, to the cluster that
// frees first (the lowest-numbered on a tie), so that a causal kernel's order (heavy rows
// first, or last) decides how long its busiest cluster runs.
void spread_over_clusters(const std::vector<passes::AttentionTask>& tasks, int clusters, KernelSummary& out) {
  struct Cluster {
    int64_t steps = 0, tasks = 0;
    int id = 0;
    bool operator>(const Cluster& o) const { return steps != o.steps ? steps > o.steps : id > o.id; }
  };
  std::priority_queue<Cluster, std::vector<Cluster>, std::greater<>> free_first;
  for (int c = 0; c < clusters; ++c) free_first.push({0, 0, c});
  for (const passes::AttentionTask& task : tasks) {
    Cluster c = free_first.top();
    free_first.pop();
    c.steps += task.blocks;
    ++c.tasks;
    free_first.push(c);
  }
  for (; !free_first.empty(); free_first.pop()) {
    const Cluster& c = free_first.top();
    if (c.steps >= out.busiest_cluster_steps) out.busiest_cluster_steps = c.steps, out.busiest_cluster_tasks = c.tasks;
  }
}

void summarise_attention(const passes::Partition& p, const TiledKernel& k, const Target& t,
                         const std::vector<GmTensor>& tensors, KernelSummary& out) {
  const passes::AttentionSpec& s = *p.kernels[k.spec].attention;
  const passes::AttentionTiling& a = *k.attention;
  out.uses_cube = true;
  out.iteration = {s.batch, s.kv_heads, s.rows(), s.skv};
  out.tile = {1, 1, a.row_blocks.tile, a.kv_blocks.tile};
  out.tile_counts = {s.batch, s.kv_heads, a.row_blocks.count, a.kv_blocks.count};
  out.tail = {1, 1, a.row_blocks.tail, a.kv_blocks.tail};
  out.attention = AttentionKernelTiles{a.q_tile, a.kv_tile, a.splits, static_cast<int64_t>(a.order), a.qk.m, a.qk.k,
                                       a.qk.n, a.pv.m, a.pv.k, a.pv.n, a.v1_rows, a.v2_rows, a.preload};
  out.useful_flops = 4.0 * static_cast<double>(s.batch * s.heads) * visible_pairs(s) * static_cast<double>(s.dim);
  out.cube_a = s.q;
  out.cube_b = s.k;
  out.cube_out = a.splits > 1 ? a.first_extra_tensor : s.out;
  std::map<std::vector<int64_t>, std::pair<passes::AttentionTask, int64_t>> classes;
  const std::vector<passes::AttentionTask> tasks = passes::attention_tasks(s, a);
  for (const passes::AttentionTask& task : tasks) {
    auto& [first, n] = classes.try_emplace(passes::attention_block_key(s, a, task), task, 0).first->second;
    ++n;
    out.loop_steps += task.blocks;
    out.longest_task_steps = std::max(out.longest_task_steps, task.blocks);
    ++out.mix_tasks;
  }
  spread_over_clusters(tasks, std::max(1, t.aic_cores), out);
  std::vector<int> slot_tensor;
  for (const TensorBinding& b : passes::attention_bindings(s, a, classes.begin()->second.first)) slot_tensor.push_back(b.tensor);
  std::map<std::vector<int64_t>, AttentionStep> steps;
  BlockProgram scratch;  // its buffers, laid out by the first emitter, serve every task
  for (const auto& [key, group] : classes) {
    const auto& [task, n] = group;
    passes::AttentionEmitter emit(s, a, task, scratch);
    auto tally_into = [&](KernelSummary& into, int64_t times) {
      KernelCounter counter(t, into);
      counter.set_tensors(tensors);
      counter.instructions(scratch, 0, slot_tensor, times);
    };
    emit.prologue();
    tally_into(out, n);
    std::vector<std::pair<int64_t, int64_t>> task_ub = ub_ranges(scratch);
    scratch.instrs.clear();
    std::set<const AttentionStep*> distinct;
    std::vector<int64_t> previous_key;
    auto it = steps.end();
    for (int step = 0; step < emit.steps(); ++step) {
      std::vector<int64_t> step_key = emit.step_key(step);
      if (step_key != previous_key) it = steps.find(step_key);  // a long task's middle steps are alike
      previous_key = std::move(step_key);
      if (it == steps.end()) {
        emit.step(step);
        it = steps.emplace(previous_key, AttentionStep{}).first;
        tally_into(it->second.tally, 1);
        it->second.ub = ub_ranges(scratch);
        scratch.instrs.clear();
      }
      accumulate(out, it->second.tally, n);
      if (distinct.insert(&it->second).second) task_ub.insert(task_ub.end(), it->second.ub.begin(), it->second.ub.end());
    }
    out.ub_addressed_bytes = std::max(out.ub_addressed_bytes, union_bytes(std::move(task_ub)));
  }
}

// The program's tensors: the partition's, then those the tiling added.
std::vector<GmTensor> all_tensors(const passes::Partition& p, const passes::TilePlan& plan) {
  std::vector<GmTensor> all = p.tensors;
  all.insert(all.end(), plan.extra_tensors.begin(), plan.extra_tensors.end());
  return all;
}

const GmTensor& tensor_of(const passes::Partition& p, const passes::TilePlan& plan, int id) {
  const auto n = static_cast<int>(p.tensors.size());
  return id < n ? p.tensors[id] : plan.extra_tensors[id - n];
}

int storage_owner(const passes::Partition& p, const passes::TilePlan& plan, int tensor) {
  while (tensor_of(p, plan, tensor).alias_of >= 0) tensor = tensor_of(p, plan, tensor).alias_of;
  return tensor;
}

double tensor_bytes(const passes::Partition& p, const passes::TilePlan& plan, int tensor) {
  const GmTensor& t = tensor_of(p, plan, tensor);
  return static_cast<double>(num_elements(t.shape) * dtype_size(t.dtype));
}

// Which reads an LRU L2 still holds from an earlier kernel, at kernel granularity: a
// tensor last touched by kernel j is resident in kernel i when the distinct bytes touched
// by the kernels in between, plus its own, fit in L2.
void summarise_l2_reuse(const passes::Partition& p, const passes::TilePlan& plan, int64_t l2_bytes,
                        TilingSummary& out) {
  std::vector<int> last_touch(p.tensors.size() + plan.extra_tensors.size(), -1);
  std::vector<double> touched_before(out.kernels.size() + 1, 0.0);  // prefix sums of touched_bytes
  for (size_t i = 0; i < out.kernels.size(); ++i) {
    KernelSummary& ks = out.kernels[i];
    const passes::TiledKernel& k = plan.kernels[i];
    std::vector<int> stored;
    if (k.body)
      for (const GmAccess& a : k.body->stores) stored.push_back(a.tensor);
    if (ks.uses_cube) stored.push_back(ks.cube_out);
    if (k.attention && k.attention->splits > 1) stored.insert(stored.end(), {ks.cube_out + 1, ks.cube_out + 2});
    double written = 0;
    for (int tensor : stored) written += tensor_bytes(p, plan, tensor);
    ks.touched_bytes = std::min(written, ks.gm_write_bytes);
    for (TensorRead& r : ks.reads) {
      r.distinct_bytes = std::min(r.bytes, tensor_bytes(p, plan, r.tensor));
      ks.touched_bytes += r.distinct_bytes;
      const int j = last_touch[storage_owner(p, plan, r.tensor)];
      r.l2_resident = j >= 0 && touched_before[i] - touched_before[j + 1] + r.distinct_bytes <=
                                    static_cast<double>(l2_bytes);
    }
    touched_before[i + 1] = touched_before[i] + ks.touched_bytes;
    for (const TensorRead& r : ks.reads) last_touch[storage_owner(p, plan, r.tensor)] = static_cast<int>(i);
    for (int tensor : stored) last_touch[storage_owner(p, plan, tensor)] = static_cast<int>(i);
  }
}

}  // namespace

struct Analyzer::Impl {
  TensorGraph graph;
  Target target;
  passes::Partition default_partition;
  // Partitions of explicit fusion choices, built on first use.
  mutable std::mutex mutex;
  mutable std::vector<std::pair<std::vector<std::vector<int>>, std::shared_ptr<const passes::Partition>>> fused;

  std::shared_ptr<const passes::Partition> partition_for(const std::vector<std::vector<int>>& fusion) const {
    const std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [key, p] : fused)
      if (key == fusion) return p;
    auto p = std::make_shared<const passes::Partition>(passes::partition_graph(graph, fusion, target.cv_fusion()));
    fused.emplace_back(fusion, p);
    return p;
  }

  TilingSummary analyze(const TileConfig& config) const {
    const passes::ResolvedConfig rc = passes::resolve_config(graph, config);
    std::shared_ptr<const passes::Partition> held;
    const passes::Partition* p = &default_partition;
    if (rc.fusion) {
      held = partition_for(*rc.fusion);
      p = held.get();
    }
    const passes::TilePlan plan = passes::expand_tiles(graph, *p, rc, target);
    TilingSummary out;
    out.feasible = plan.feasible;
    out.violations = plan.violations;
    if (!plan.feasible) return out;
    out.kernels.resize(plan.kernels.size());
    std::vector<GmTensor> with_extra;
    const std::vector<GmTensor>* tensors = &p->tensors;
    if (!plan.extra_tensors.empty()) tensors = &(with_extra = all_tensors(*p, plan));
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      const TiledKernel& k = plan.kernels[i];
      KernelSummary& ks = out.kernels[i];
      ks.kernel = static_cast<int>(i);
      ks.combine = k.kind == passes::KernelKind::Combine;
      if (k.kind != passes::KernelKind::Zero && !ks.combine) ks.nodes = p->kernels[k.spec].nodes;
      ks.after = k.after;
      ks.nbuffer = k.nbuffer;
      fill_footprint(k, ks);
      ks.loads_clear_of_stores = loads_clear_of_stores(k);
      KernelCounter counter(target, ks);
      counter.set_tensors(*tensors);
      if (k.kind == passes::KernelKind::Cube) {
        summarise_cube(*p, k, counter, ks);
      } else if (k.kind == passes::KernelKind::Attention) {
        summarise_attention(*p, k, target, *tensors, ks);
      } else {
        summarise_vector(k, counter, ks, *tensors);
      }
    }
    summarise_l2_reuse(*p, plan, target.l2_bytes, out);
    return out;
  }
};

Analyzer::Analyzer(const TensorGraph& graph, const Target& target) : impl_(std::make_unique<Impl>()) {
  impl_->graph = graph;
  impl_->target = target;
  impl_->default_partition = passes::partition_graph(impl_->graph, std::nullopt, target.cv_fusion());
}

Analyzer::~Analyzer() = default;
Analyzer::Analyzer(Analyzer&&) noexcept = default;

TilingSummary Analyzer::analyze(const TileConfig& config) const { return impl_->analyze(config); }

TilingSummary analyze(const TensorGraph& graph, const TileConfig& config, const Target& target) {
  return Analyzer(graph, target).analyze(config);
}

}  // namespace pto
