// Pass 5, codegen of a flash_attention task (see codegen_attention.h).
//
// Map: attention_tasks() and the block key say what a task owns; the emitter's
// constructor names the buffers and binding slots; step(t) emits the Cube unit's QK(t)
// and PV(t - P) and every vector unit's SM(t) and GU(t - P); the counters a step starts
// from (L0 sub-steps and sub-tiles, slices) are computed from t, so that any step can be
// emitted alone (analyze() emits one step per key).
//
// Flags: a hand-off between units is one SET/WAIT pair per block and receiving unit
// (event = purpose * 8 + slot); a slot's reuse waits for the release the consumer of
// its previous occupant set n blocks before. A release is set only when a later block
// reuses the slot, so that every SET has its WAIT.
#include "core/passes/codegen_attention.h"

#include <algorithm>

#include "core/error.h"
#include "core/passes/attention_tiling.h"
#include "core/passes/sync_flag.h"
#include "core/passes/vector_instr.h"

namespace pto::passes {
namespace {

// Flag purposes; the event of a flag is purpose * 8 + slot.
enum Purpose {
  kKFree, kKLoaded, kVFree, kPL1Free, kVLoaded, kL0Free, kL0Ready, kL0cFree, kL0cReady,
  kSReady, kSFree, kPReady, kPFree, kOReady, kOFree,
  kSubFree, kSubLoaded, kPubFree, kPubReady, kPvFree, kPvLoaded, kOutFree, kOutReady,
  // int8 K/V: a vector unit's landing slot free, loaded, its output slot free, cast; the
  // dequantized share ready for the Cube, and its destination free again. K's, then V's.
  kKqInFree, kKqLoaded, kKqOutFree, kKqCast, kKqReady, kKqFree,
  kVqInFree, kVqLoaded, kVqOutFree, kVqCast, kVqReady, kVqFree,
};
int event(Purpose p, int64_t slot = 0) { return static_cast<int>(p) * 8 + static_cast<int>(slot); }
// The event of an int8 hand-off named by K's purpose: K's (key), else V's counterpart.
int dequant_event(Purpose k_purpose, bool key, int64_t slot) {
  return event(key ? k_purpose : static_cast<Purpose>(k_purpose + (kVqInFree - kKqInFree)), slot);
}

constexpr double kFiniteFloor = -3.0e38;  // a row max never below this: exp(-inf - m) stays 0, never NaN

Operand local(int buffer, Shape offset, Shape extent) { return {MemLevel::UB, buffer, std::move(offset), std::move(extent)}; }

}  // namespace

std::vector<AttentionTask> attention_tasks(const AttentionSpec& s, const AttentionTiling& a) {
  std::vector<AttentionTask> tasks;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.kv_heads; ++h)
      for (int64_t rb = 0; rb < a.row_blocks.count; ++rb) {
        AttentionTask t;
        t.batch = b;
        t.kv_head = h;
        t.row0 = rb * a.row_blocks.tile;
        t.rows = a.row_blocks.extent(rb);
        const int64_t needed = needed_kv_blocks(s, a.kv_tile, a.kv_blocks.count, t.row0, t.rows);
        for (int64_t sp = 0; sp < a.splits; ++sp) {
          t.split = sp;
          t.block0 = sp * needed / a.splits;
          t.blocks = (sp + 1) * needed / a.splits - t.block0;
          tasks.push_back(t);
        }
      }
  auto rank = [&](const AttentionTask& t) {
    const int64_t rb = t.row0 / a.row_blocks.tile;
    switch (a.order) {
      case TaskOrder::Qbh: return std::make_tuple(rb, t.batch, t.kv_head, t.split);
      case TaskOrder::HeavyFirst: return std::make_tuple(-t.blocks, t.batch, t.kv_head, rb * a.splits + t.split);
      case TaskOrder::Bhq: break;
    }
    return std::make_tuple(t.batch, t.kv_head, rb, t.split);
  };
  std::stable_sort(tasks.begin(), tasks.end(), [&](const AttentionTask& x, const AttentionTask& y) { return rank(x) < rank(y); });
  return tasks;
}

std::vector<int64_t> attention_block_key(const AttentionSpec& s, const AttentionTiling& a, const AttentionTask& t) {
  const bool ragged = t.block0 + t.blocks == a.kv_blocks.count && a.kv_blocks.tail != a.kv_blocks.tile;
  return {t.rows, t.blocks, ragged, s.causal ? t.row0 % s.sq : 0, s.causal ? t.block0 : 0};
}

std::vector<TensorBinding> attention_bindings(const AttentionSpec& s, const AttentionTiling& a, const AttentionTask& t) {
  const int64_t kv0 = t.block0 * a.kv_tile, bk = t.batch * s.kv_heads + t.kv_head;
  std::vector<TensorBinding> b = {{s.q_rows, {t.batch, t.kv_head, t.row0, 0}},
                                  {s.k, {t.batch, t.kv_head, kv0, 0}},
                                  {s.v, {t.batch, t.kv_head, kv0, 0}}};
  if (a.splits > 1) {
    b.push_back({a.first_extra_tensor, {bk, t.split, t.row0, 0}});
  } else {
    b.push_back({s.out_rows, {t.batch, t.kv_head, t.row0, 0}});
  }
  if (s.causal) b.push_back({s.positions, {t.batch, t.kv_head * s.group(), 0, 0}});
  if (s.quantized()) {
    b.push_back({s.k_scale, {t.batch, t.kv_head, kv0 / kKvQuantBlock}});
    b.push_back({s.v_scale, {t.batch, t.kv_head, kv0 / kKvQuantBlock}});
  }
  if (a.splits > 1) {
    b.push_back({a.first_extra_tensor + 1, {bk, t.split, t.row0, 0}});
    b.push_back({a.first_extra_tensor + 2, {bk, t.split, t.row0, 0}});
  }
  return b;
}

AttentionEmitter::AttentionEmitter(const AttentionSpec& spec, const AttentionTiling& tiling, const AttentionTask& task,
                                   BlockProgram& block)
    : s_(spec), a_(tiling), task_(task), block_(block), preload_(tiling.preload) {
  block.core = CoreType::MIX;
  block.sequential_tasks = true;
  if (block.buffers.empty()) {
    for (size_t i = 0; i < tiling.buffers.size(); ++i) {
      const ClusterBuffer& c = tiling.buffers[i];
      LocalBuffer b;
      b.id = static_cast<int>(i);
      b.name = c.name;
      b.level = c.level;
      b.unit = c.unit;
      b.dtype = c.dtype;
      b.shape = c.shape;
      b.layout = c.layout;
      b.byte_offset = c.offset;
      block.buffers.push_back(std::move(b));
    }
  }
  const int64_t share = a_.unit_rows(task.rows);
  for (int u = 1; u <= a_.units; ++u) {
    Unit unit;
    unit.id = a_.vector_unit(u);
    unit.row0 = (u - 1) * share;
    unit.rows = std::clamp<int64_t>(task.rows - unit.row0, 0, share);
    if (unit.rows == 0) continue;
    unit.v1_slices = ceil_div(unit.rows, a_.v1_rows);
    unit.v2_slices = ceil_div(unit.rows, a_.v2_rows);
    units_.push_back(unit);
  }
  int next = 0;
  for (Slot k : {kQ, kK, kV, kOut}) slot_[k] = next++;
  if (s_.causal) slot_[kPositions] = next++;
  if (s_.quantized()) slot_[kKScale] = next++, slot_[kVScale] = next++;
  if (a_.splits > 1) slot_[kMPart] = next++, slot_[kLPart] = next++;
  for (int64_t r = 1; r < task.rows; ++r)
    if ((task.row0 + r) % s_.sq == 0) segments_.push_back(r);
  for (int64_t j = 0; j < task.blocks; ++j) {
    l0_total_ += qk_substeps(j) + pv_substeps(j);
    l0c_total_ += qk_tiles(j) + pv_tiles(j);
  }
}

int AttentionEmitter::buffer(const std::string& name, int unit) const { return slot_buffer(name, 0, unit); }

int AttentionEmitter::slot_buffer(const std::string& name, int64_t index, int unit) const {
  const auto it = a_.slots.find({name, unit});
  if (it == a_.slots.end())
    internal_error("flash_attention codegen: no buffer '" + name + "' on unit " + std::to_string(unit));
  return it->second[static_cast<size_t>(index) % it->second.size()];
}

int AttentionEmitter::steps() const { return static_cast<int>(task_.blocks) + preload_; }

int64_t AttentionEmitter::width(int64_t j) const { return a_.kv_blocks.extent(task_.block0 + j); }

bool AttentionEmitter::masked(int64_t j) const {
  if (!s_.causal) return false;
  const int64_t first_p = segments_.empty() ? task_.row0 % s_.sq : 0;
  const int64_t last_col = (task_.block0 + j) * a_.kv_tile + width(j) - 1;
  return last_col > first_p + (s_.skv - s_.sq);
}

int64_t AttentionEmitter::qk_tiles(int64_t j) const {
  return ceil_div(task_.rows, a_.qk.m) * ceil_div(width(j), a_.qk.n);
}
int64_t AttentionEmitter::qk_substeps(int64_t j) const { return qk_tiles(j) * ceil_div(s_.dim, a_.qk.k); }
int64_t AttentionEmitter::pv_tiles(int64_t) const { return ceil_div(task_.rows, a_.pv.m) * ceil_div(s_.dim, a_.pv.n); }
int64_t AttentionEmitter::pv_substeps(int64_t j) const { return pv_tiles(j) * ceil_div(width(j), a_.pv.k); }

// The Cube unit's order: QK(0..P-1), then QK(t), PV(t - P) per step.
int64_t AttentionEmitter::l0_before(int t) const {
  int64_t n = 0;
  for (int64_t j = 0; j < std::min<int64_t>(t, task_.blocks); ++j) n += qk_substeps(j);
  for (int64_t j = 0; j < t - preload_ && j < task_.blocks; ++j) n += pv_substeps(j);
  return n;
}
int64_t AttentionEmitter::l0c_before(int t) const {
  int64_t n = 0;
  for (int64_t j = 0; j < std::min<int64_t>(t, task_.blocks); ++j) n += qk_tiles(j);
  for (int64_t j = 0; j < t - preload_ && j < task_.blocks; ++j) n += pv_tiles(j);
  return n;
}

void AttentionEmitter::push(Instr in, int unit) {
  in.unit = unit;
  block_.instrs.push_back(std::move(in));
}

void AttentionEmitter::flag(Opcode op, int unit, Pipe src, Pipe dst, int ev, int peer) {
  Instr in = sync_flag(op, src, dst, ev);
  in.flag_peer = peer < 0 || peer == unit ? -1 : peer;
  push(std::move(in), unit);
}

Operand AttentionEmitter::gm(Slot slot, Shape offset, Shape extent) const {
  return {MemLevel::GM, slot_[slot], std::move(offset), std::move(extent)};
}

// A SET on `set_unit` and its WAIT on `wait_unit`, emitted where each belongs.
void AttentionEmitter::hand_off(int set_unit, Pipe src, int wait_unit, Pipe dst, int ev) {
  flag(Opcode::SET_FLAG, set_unit, src, dst, ev, wait_unit);
  flag(Opcode::WAIT_FLAG, wait_unit, src, dst, ev, set_unit);
}

void AttentionEmitter::prologue() {
  Instr in;
  in.op = Opcode::TLOAD;
  in.pipe = Pipe::MTE2;
  in.dst = {MemLevel::L1, buffer("q.l1"), {0, 0}, {task_.rows, s_.dim}};
  in.src = {gm(kQ, {0, 0, 0, 0}, {1, 1, task_.rows, s_.dim})};
  push(std::move(in), 0);
}

// TMOVs of the L0 pieces and TMATMULs of one matmul of the task, L0C sub-tile by
// sub-tile, each finished sub-tile moved out of L0C by FIX to where its consumer reads it.
void AttentionEmitter::matmul(const std::string& a_l1, const std::string& b_l1, int64_t rows, int64_t k_len,
                              int64_t n_len, const AttentionTiling::L0& l0, int64_t j, bool scores, int64_t& step,
                              int64_t& tile) {
  const int64_t n = a_.nbuffer, f = a_.fifo, out_slot = j % f;
  const int a_buf = a_l1 == "q.l1" ? buffer(a_l1) : slot_buffer(a_l1, j), b_buf = slot_buffer(b_l1, j);
  bool first_out = true;
  for (int64_t m0 = 0; m0 < rows; m0 += l0.m) {
    const int64_t m = std::min(l0.m, rows - m0);
    for (int64_t n0 = 0; n0 < n_len; n0 += l0.n) {
      const int64_t nn = std::min(l0.n, n_len - n0);
      const int64_t c_slot = tile % n;
      if (tile >= n) flag(Opcode::WAIT_FLAG, 0, Pipe::FIX, Pipe::M, event(kL0cFree, c_slot));
      for (int64_t k0 = 0; k0 < k_len; k0 += l0.k) {
        const int64_t k = std::min(l0.k, k_len - k0), l_slot = step % n;
        if (step >= n) flag(Opcode::WAIT_FLAG, 0, Pipe::M, Pipe::MTE1, event(kL0Free, l_slot));
        Instr ma;
        ma.op = Opcode::TMOV;
        ma.pipe = Pipe::MTE1;
        ma.dst = {MemLevel::L0A, slot_buffer("a.l0a", l_slot), {0, 0}, {m, k}};
        ma.src = {{MemLevel::L1, a_buf, {m0, k0}, {m, k}}};
        push(ma, 0);
        Instr mb = ma;
        mb.dst = {MemLevel::L0B, slot_buffer("b.l0b", l_slot), {0, 0}, {k, nn}};
        mb.src = {{MemLevel::L1, b_buf, {k0, n0}, {k, nn}}};
        push(mb, 0);
        hand_off(0, Pipe::MTE1, 0, Pipe::M, event(kL0Ready, l_slot));
        Instr mm;
        mm.op = Opcode::TMATMUL;
        mm.pipe = Pipe::M;
        mm.dst = {MemLevel::L0C, slot_buffer("c.l0c", c_slot), {0, 0}, {m, nn}};
        mm.src = {ma.dst, mb.dst};
        mm.accumulate = k0 > 0;
        push(mm, 0);
        if (step + n < l0_total_) flag(Opcode::SET_FLAG, 0, Pipe::M, Pipe::MTE1, event(kL0Free, l_slot));
        ++step;
      }
      hand_off(0, Pipe::M, 0, Pipe::FIX, event(kL0cReady, c_slot));
      // The consumer's slot must be free before the first sub-tile lands in it.
      const Purpose free = scores ? kSFree : kOFree;
      if (first_out && j >= f)
        for (const Unit& u : units_)
          flag(Opcode::WAIT_FLAG, 0, a_.direct ? Pipe::V : Pipe::MTE2, Pipe::FIX, event(free, out_slot), u.id);
      first_out = false;
      const Operand from{MemLevel::L0C, slot_buffer("c.l0c", c_slot), {0, 0}, {m, nn}};
      if (!a_.direct) {
        Instr out;
        out.op = Opcode::TMOV;
        out.pipe = Pipe::FIX;
        out.dst = {MemLevel::WS, slot_buffer(scores ? "s.ws" : "o.ws", j), {m0, n0}, {m, nn}};
        out.src = {from};
        push(std::move(out), 0);
      } else {
        for (const Unit& u : units_) {  // each unit's rows of the sub-tile into its UB
          const int64_t lo = std::max(m0, u.row0), hi = std::min(m0 + m, u.row0 + u.rows);
          if (lo >= hi) continue;
          Instr out;
          out.op = Opcode::TMOV;
          out.pipe = Pipe::FIX;
          out.dst = local(slot_buffer(scores ? "s.ub" : "pv.ub", j, u.id), {lo - u.row0, n0}, {hi - lo, nn});
          out.src = {{MemLevel::L0C, from.id, {lo - m0, 0}, {hi - lo, nn}}};
          push(std::move(out), 0);
        }
      }
      if (tile + n < l0c_total_) flag(Opcode::SET_FLAG, 0, Pipe::FIX, Pipe::M, event(kL0cFree, c_slot));
      ++tile;
    }
  }
  const Purpose ready = scores ? kSReady : kOReady;
  for (const Unit& u : units_)
    flag(Opcode::SET_FLAG, 0, Pipe::FIX, a_.direct ? Pipe::V : Pipe::MTE2, event(ready, out_slot), u.id);
}

int64_t AttentionEmitter::dequant_tokens(int vu, int64_t j, int64_t* first) const {
  const int64_t w = width(j), share = a_.unit_rows(w), t0 = (vu - 1) * share;
  if (first) *first = t0;
  return std::clamp<int64_t>(w - t0, 0, share);
}
bool AttentionEmitter::dequant_reuses(int vu, int64_t j) const {
  return j >= a_.nbuffer && dequant_tokens(vu, j) > 0 && dequant_tokens(vu, j - a_.nbuffer) > 0;
}
bool AttentionEmitter::dequant_released(int vu, int64_t j) const {
  return j + a_.nbuffer < task_.blocks && dequant_reuses(vu, j + a_.nbuffer);
}
int64_t AttentionEmitter::dequant_chunks(int vu, int64_t j) const { return ceil_div(dequant_tokens(vu, j), a_.dq_rows); }
// Only the KV's last block is ragged, so every block before j is whole.
int64_t AttentionEmitter::dequant_chunks_before(int vu, int64_t j) const { return j == 0 ? 0 : j * dequant_chunks(vu, 0); }

// DQ(j) of K (key) or V, for an int8 KV cache: each vector unit takes its share of block
// j's tokens from GM, dq_rows at a time, multiplies each 128-token run by its fp32 scale,
// and puts the result in q's dtype where the Cube reads it: the block's L1 buffer (K
// transposed to [D, w]) on a direct target, else the workspace, from which the Cube moves
// it into L1. The UB slots turn over by chunk, the destination by block.
void AttentionEmitter::dequant(int64_t j, bool key) {
  const int64_t slot = j % a_.nbuffer;
  for (int vu = 1; vu <= a_.units; ++vu) {
    int64_t t0 = 0;
    const int64_t cnt = dequant_tokens(vu, j, &t0);
    if (cnt == 0) continue;
    const int u = a_.vector_unit(vu);
    int64_t chunk = dequant_chunks_before(vu, j);
    for (int64_t a = t0; a < t0 + cnt; a += a_.dq_rows, ++chunk) {
      if (a == t0 && dequant_reuses(vu, j))  // the first chunk waits for the destination
        flag(Opcode::WAIT_FLAG, u, dequantized_reader(), Pipe::MTE3, dequant_event(kKqFree, key, slot), 0);
      dequant_chunk(vu, j, key, chunk, a, std::min(a_.dq_rows, t0 + cnt - a));
    }
    flag(Opcode::SET_FLAG, u, Pipe::MTE3, dequantized_reader(), dequant_event(kKqReady, key, slot), 0);
  }
}

// Tokens [a, a + cnt) of block j, vector unit vu's chunk number `chunk` of the task.
void AttentionEmitter::dequant_chunk(int vu, int64_t j, bool key, int64_t chunk, int64_t a, int64_t cnt) {
  const int64_t n = a_.nbuffer, slot = chunk % n, d = s_.dim, first = j * a_.kv_tile + a;
  const int64_t total = dequant_chunks_before(vu, task_.blocks - 1) + dequant_chunks(vu, task_.blocks - 1);
  const bool reuses = chunk >= n, released = chunk + n < total;
  auto ev = [&](Purpose p) { return dequant_event(p, key, slot); };
  const std::string x = key ? "k" : "v";
  const int u = a_.vector_unit(vu);
  const int64_t g0 = first / kKvQuantBlock, g1 = (first + cnt - 1) / kKvQuantBlock;
  if (reuses) flag(Opcode::WAIT_FLAG, u, Pipe::V, Pipe::MTE2, ev(kKqInFree));
  Instr load;
  load.op = Opcode::TLOAD;
  load.pipe = Pipe::MTE2;
  load.dst = local(slot_buffer(x + "q.ub", slot, u), {0, 0}, {cnt, d});
  load.src = {gm(key ? kK : kV, {0, 0, first, 0}, {1, 1, cnt, d})};
  const Operand quantized = load.dst;
  push(load, u);
  load.dst = local(slot_buffer(x + "s.ub", slot, u), {0, 0}, {1, g1 - g0 + 1});
  load.src = {gm(key ? kKScale : kVScale, {0, 0, g0}, {1, 1, g1 - g0 + 1})};
  const Operand scales = load.dst;
  push(std::move(load), u);
  hand_off(u, Pipe::MTE2, u, Pipe::V, ev(kKqLoaded));
  const int dq = buffer("dq.ub", u);
  vec(u, Opcode::TVEC, OpKind::Cast, local(dq, {0, 0}, {cnt, d}), {quantized});
  for (int64_t r = 0; r < cnt;) {  // a run of tokens under one scale
    const int64_t g = (first + r) / kKvQuantBlock, end = std::min(cnt, (g + 1) * kKvQuantBlock - first);
    const Operand rows = local(dq, {r, 0}, {end - r, d});
    vec(u, Opcode::TVEC, OpKind::Mul, rows, {rows, local(scales.id, {0, g - g0}, {1, 1})});
    r = end;
  }
  if (released) flag(Opcode::SET_FLAG, u, Pipe::V, Pipe::MTE2, ev(kKqInFree));
  if (reuses) flag(Opcode::WAIT_FLAG, u, Pipe::MTE3, Pipe::V, ev(kKqOutFree));
  const Operand out = local(slot_buffer(x + "h.ub", slot, u), {0, 0}, {cnt, d});
  vec(u, Opcode::TVEC, OpKind::Cast, out, {local(dq, {0, 0}, {cnt, d})});
  hand_off(u, Pipe::V, u, Pipe::MTE3, ev(kKqCast));
  Instr move;
  move.op = Opcode::TMOV;
  move.pipe = Pipe::MTE3;
  move.src = {out};
  if (!a_.direct) {
    move.dst = {MemLevel::WS, slot_buffer(x + ".ws", j % n), {a, 0}, {cnt, d}};
  } else if (key) {
    move.dst = {MemLevel::L1, slot_buffer("k.l1", j % n), {0, a}, {d, cnt}};
    move.transpose = true;
  } else {
    move.dst = {MemLevel::L1, slot_buffer("v.l1", j % n), {a, 0}, {cnt, d}};
  }
  push(std::move(move), u);
  if (released) flag(Opcode::SET_FLAG, u, Pipe::MTE3, Pipe::V, ev(kKqOutFree));
}

// The Cube's side of DQ(j): it waits for every unit's share; through WS it then moves the
// block into L1 itself (K transposed), and the WS slot is free again.
void AttentionEmitter::cube_takes_dequantized(int64_t j, bool key) {
  const int64_t n = a_.nbuffer, slot = j % n, w = width(j);
  for (int vu = 1; vu <= a_.units; ++vu)
    if (dequant_tokens(vu, j) > 0)
      flag(Opcode::WAIT_FLAG, 0, Pipe::MTE3, dequantized_reader(), dequant_event(kKqReady, key, slot), a_.vector_unit(vu));
  if (a_.direct) return;
  Instr move;
  move.op = Opcode::TMOV;
  move.pipe = Pipe::MTE2;
  move.dst = key ? Operand{MemLevel::L1, slot_buffer("k.l1", slot), {0, 0}, {s_.dim, w}}
                 : Operand{MemLevel::L1, slot_buffer("v.l1", slot), {0, 0}, {w, s_.dim}};
  move.src = {{MemLevel::WS, slot_buffer(key ? "k.ws" : "v.ws", slot), {0, 0}, {w, s_.dim}}};
  move.transpose = key;
  push(std::move(move), 0);
  cube_releases_dequantized(j, key);
}

// The destination of unit shares of block j free for block j + n: after the Cube's move out
// of WS, or (direct) after the matmul that read the L1 buffer.
void AttentionEmitter::cube_releases_dequantized(int64_t j, bool key) {
  for (int vu = 1; vu <= a_.units; ++vu)
    if (dequant_released(vu, j))
      flag(Opcode::SET_FLAG, 0, dequantized_reader(), Pipe::MTE3, dequant_event(kKqFree, key, j % a_.nbuffer),
           a_.vector_unit(vu));
}

// The Cube's pipe that reads a dequantized block: MTE1 out of L1 (direct), else MTE2 out
// of the workspace.
Pipe AttentionEmitter::dequantized_reader() const { return a_.direct ? Pipe::MTE1 : Pipe::MTE2; }

// The Cube's MTE2 writes the K and V blocks into L1 (from GM, or int8 through WS); else
// the vector units' dequantization does.
bool AttentionEmitter::cube_loads_kv() const { return !s_.quantized() || !a_.direct; }

// K block j (key: transposed, the B operand [D, w]) or V block j into its L1 slot: from GM,
// or the vector units' dequantized block.
void AttentionEmitter::kv_block_into_l1(int64_t j, bool key) {
  const int64_t slot = j % a_.nbuffer, w = width(j);
  if (j >= a_.nbuffer && cube_loads_kv()) flag(Opcode::WAIT_FLAG, 0, Pipe::MTE1, Pipe::MTE2, event(key ? kKFree : kVFree, slot));
  if (s_.quantized()) return cube_takes_dequantized(j, key);
  Instr load;
  load.op = Opcode::TLOAD;
  load.pipe = Pipe::MTE2;
  load.dst = key ? Operand{MemLevel::L1, slot_buffer("k.l1", slot), {0, 0}, {s_.dim, w}}
                 : Operand{MemLevel::L1, slot_buffer("v.l1", slot), {0, 0}, {w, s_.dim}};
  load.src = {gm(key ? kK : kV, {0, 0, j * a_.kv_tile, 0}, {1, 1, w, s_.dim})};
  load.transpose = key;
  push(std::move(load), 0);
}

// S_j = Q K_j^T.
void AttentionEmitter::qk(int64_t j, int64_t& step, int64_t& tile) {
  const int64_t n = a_.nbuffer, slot = j % n;
  kv_block_into_l1(j, true);
  if (cube_loads_kv()) hand_off(0, Pipe::MTE2, 0, Pipe::MTE1, event(kKLoaded, slot));
  matmul("q.l1", "k.l1", task_.rows, s_.dim, width(j), a_.qk, j, true, step, tile);
  if (j + n < task_.blocks && cube_loads_kv()) flag(Opcode::SET_FLAG, 0, Pipe::MTE1, Pipe::MTE2, event(kKFree, slot));
  if (!cube_loads_kv()) cube_releases_dequantized(j, true);
}

// O_j = P_j V_j: the V block from GM, the P block from the vector units.
void AttentionEmitter::pv(int64_t j, int64_t& step, int64_t& tile) {
  const int64_t n = a_.nbuffer, slot = j % n, f = a_.fifo, p_slot = j % f, w = width(j);
  kv_block_into_l1(j, false);
  if (!a_.direct) {
    for (const Unit& u : units_) flag(Opcode::WAIT_FLAG, 0, Pipe::MTE3, Pipe::MTE2, event(kPReady, p_slot), u.id);
    if (j >= n) flag(Opcode::WAIT_FLAG, 0, Pipe::MTE1, Pipe::MTE2, event(kPL1Free, slot));
    Instr p;
    p.op = Opcode::TMOV;
    p.pipe = Pipe::MTE2;
    p.dst = {MemLevel::L1, slot_buffer("p.l1", slot), {0, 0}, {task_.rows, w}};
    p.src = {{MemLevel::WS, slot_buffer("p.ws", j), {0, 0}, {task_.rows, w}}};
    push(std::move(p), 0);
    if (j + f < task_.blocks)
      for (const Unit& u : units_) flag(Opcode::SET_FLAG, 0, Pipe::MTE2, Pipe::MTE3, event(kPFree, p_slot), u.id);
  }
  if (cube_loads_kv()) hand_off(0, Pipe::MTE2, 0, Pipe::MTE1, event(kVLoaded, slot));
  if (a_.direct)
    for (const Unit& u : units_) flag(Opcode::WAIT_FLAG, 0, Pipe::MTE3, Pipe::MTE1, event(kPReady, p_slot), u.id);
  matmul("p.l1", "v.l1", task_.rows, w, s_.dim, a_.pv, j, false, step, tile);
  if (!cube_loads_kv()) cube_releases_dequantized(j, false);
  if (j + n < task_.blocks && cube_loads_kv()) flag(Opcode::SET_FLAG, 0, Pipe::MTE1, Pipe::MTE2, event(kVFree, slot));
  if (j + n < task_.blocks && !a_.direct) flag(Opcode::SET_FLAG, 0, Pipe::MTE1, Pipe::MTE2, event(kPL1Free, slot));
  if (j + f < task_.blocks && a_.direct)
    for (const Unit& u : units_) flag(Opcode::SET_FLAG, 0, Pipe::MTE1, Pipe::MTE3, event(kPFree, p_slot), u.id);
}

void AttentionEmitter::vec(int unit, Opcode op, OpKind vop, Operand dst, std::vector<Operand> src,
                           std::optional<double> scalar, int reduce_dim) {
  push(vector_instr(op, vop, std::move(dst), std::move(src), scalar, reduce_dim), unit);
}

// The `rows` x `cols` slice at task row r0 of block j's Cube output, where the vector unit
// reads it: direct, in the unit's share of the block in UB; through WS, moved into the
// unit's UB slot `index` % n once its previous occupant is released, arrival flagged to V.
Operand AttentionEmitter::slice_in(const Unit& u, const std::string& ub, const std::string& ws, int64_t j, int64_t r0,
                                   int64_t rows, int64_t cols, int64_t index, int free, int loaded) {
  const int64_t n = a_.nbuffer, slot = index % n;
  if (a_.direct) return local(slot_buffer(ub, j, u.id), {r0 - u.row0, 0}, {rows, cols});
  if (index >= n) flag(Opcode::WAIT_FLAG, u.id, Pipe::V, Pipe::MTE2, event(static_cast<Purpose>(free), slot));
  Instr load;
  load.op = Opcode::TMOV;
  load.pipe = Pipe::MTE2;
  load.dst = local(slot_buffer(ub, slot, u.id), {0, 0}, {rows, cols});
  load.src = {{MemLevel::WS, slot_buffer(ws, j), {r0, 0}, {rows, cols}}};
  const Operand landed = load.dst;
  push(std::move(load), u.id);
  hand_off(u.id, Pipe::MTE2, u.id, Pipe::V, event(static_cast<Purpose>(loaded), slot));
  return landed;
}

// The causal mask of rows [r0, r0 + rows) of the task (slice-local rows from 0), one
// instruction per head the rows span: positions come from the score matrix's view.
void AttentionEmitter::mask(const Unit& u, const Operand& dst, const Operand& src, int64_t r0, int64_t rows, int64_t j) {
  for (int64_t a = r0; a < r0 + rows;) {
    const int64_t row = task_.row0 + a, head = row / s_.sq, p = row % s_.sq;
    const int64_t b = std::min(r0 + rows, a + (s_.sq - p));
    const int64_t w = dst.extent.back();
    Instr in;
    in.op = Opcode::TVEC;
    in.pipe = Pipe::V;
    in.vop = OpKind::CausalMask;
    in.dst = local(dst.id, {a - r0, 0}, {b - a, w});
    in.src = {local(src.id, {a - r0, 0}, {b - a, w}),
              gm(kPositions, {0, head % s_.group(), p, (task_.block0 + j) * a_.kv_tile}, {1, 1, b - a, w})};
    push(std::move(in), u.id);
    a = b;
  }
}

// SM(j): each vector unit's rows, a v1 slice at a time; the running max and sum of the
// unit's rows alternate between two buffers by block parity.
void AttentionEmitter::softmax(int64_t j) {
  const int64_t f = a_.fifo, slot = j % f;
  for (const Unit& u : units_) {
    flag(Opcode::WAIT_FLAG, u.id, Pipe::FIX, a_.direct ? Pipe::V : Pipe::MTE2, event(kSReady, slot), 0);
    for (int64_t k = 0; k < u.v1_slices; ++k) softmax_slice(u, j, k);
    if (j + f < task_.blocks)
      flag(Opcode::SET_FLAG, u.id, a_.direct ? Pipe::V : Pipe::MTE2, Pipe::FIX, event(kSFree, slot), 0);
    flag(Opcode::SET_FLAG, u.id, Pipe::MTE3, a_.direct ? Pipe::MTE1 : Pipe::MTE2, event(kPReady, slot), 0);
  }
}

void AttentionEmitter::softmax_slice(const Unit& u, int64_t j, int64_t k) {
  const int64_t n = a_.nbuffer, f = a_.fifo, p_slot = j % f, w = width(j);
  const int64_t r0 = u.row0 + k * a_.v1_rows, rows = std::min(a_.v1_rows, u.row0 + u.rows - r0);
  const int64_t q = j * u.v1_slices + k, total = task_.blocks * u.v1_slices, qs = q % n;
  const int64_t unit_row = r0 - u.row0;
  const Operand score = slice_in(u, "s.ub", "s.ws", j, r0, rows, w, q, kSubFree, kSubLoaded);
  const Operand x = local(buffer("x.ub", u.id), {0, 0}, {rows, w}), y = local(buffer("y.ub", u.id), {0, 0}, {rows, w});
  auto row = [&](const std::string& name, int64_t index) {
    return local(index < 0 ? buffer(name, u.id) : slot_buffer(name, index, u.id), {index < 0 ? 0 : unit_row, 0},
                 {rows, 1});
  };
  vec(u.id, Opcode::TVEC, OpKind::Mul, x, {score}, s_.scale);
  if (!a_.direct && q + n < total) flag(Opcode::SET_FLAG, u.id, Pipe::V, Pipe::MTE2, event(kSubFree, qs));
  Operand cur = x, other = y;
  const bool is_masked = masked(j);
  if (is_masked) {
    mask(u, y, x, r0, rows, j);
    std::swap(cur, other);
  }
  const Operand m_now = row("m.ub", j), m_before = row("m.ub", j + 1), mc = row("mc.ub", -1);
  if (j == 0 && !is_masked) {
    vec(u.id, Opcode::TREDUCE, OpKind::Amax, m_now, {cur}, std::nullopt, 1);
  } else {
    vec(u.id, Opcode::TREDUCE, OpKind::Amax, mc, {cur}, std::nullopt, 1);
    if (j == 0) {  // a row that sees nothing of its first block keeps a finite max
      vec(u.id, Opcode::TVEC, OpKind::Max, m_now, {mc}, kFiniteFloor);
    } else {
      vec(u.id, Opcode::TVEC, OpKind::Max, m_now, {m_before, mc});
      vec(u.id, Opcode::TVEC, OpKind::Sub, row("drop.ub", -1), {m_before, m_now});
      vec(u.id, Opcode::TVEC, OpKind::Exp, row("alpha.ub", j), {row("drop.ub", -1)});
    }
  }
  vec(u.id, Opcode::TVEC, OpKind::Sub, other, {cur, m_now});
  vec(u.id, Opcode::TVEC, OpKind::Exp, cur, {other});
  const Operand l_now = row("l.ub", j);
  if (j == 0) {
    vec(u.id, Opcode::TREDUCE, OpKind::Sum, l_now, {cur}, std::nullopt, 1);
  } else {
    vec(u.id, Opcode::TREDUCE, OpKind::Sum, row("lc.ub", -1), {cur}, std::nullopt, 1);
    vec(u.id, Opcode::TVEC, OpKind::Mul, row("ls.ub", -1), {row("l.ub", j + 1), row("alpha.ub", j)});
    vec(u.id, Opcode::TVEC, OpKind::Add, l_now, {row("ls.ub", -1), row("lc.ub", -1)});
  }
  // P, in the Cube's input dtype, to the Cube: through WS or straight into its L1.
  if (q >= n) flag(Opcode::WAIT_FLAG, u.id, Pipe::MTE3, Pipe::V, event(kPubFree, qs));
  const Operand p = local(slot_buffer("p.ub", qs, u.id), {0, 0}, {rows, w});
  vec(u.id, Opcode::TVEC, OpKind::Cast, p, {cur});
  hand_off(u.id, Pipe::V, u.id, Pipe::MTE3, event(kPubReady, qs));
  if (k == 0 && j >= f)
    flag(Opcode::WAIT_FLAG, u.id, a_.direct ? Pipe::MTE1 : Pipe::MTE2, Pipe::MTE3, event(kPFree, p_slot), 0);
  Instr out;
  out.op = Opcode::TMOV;
  out.pipe = Pipe::MTE3;
  out.dst = a_.direct ? Operand{MemLevel::L1, slot_buffer("p.l1", j), {r0, 0}, {rows, w}}
                      : Operand{MemLevel::WS, slot_buffer("p.ws", j), {r0, 0}, {rows, w}};
  out.src = {p};
  push(std::move(out), u.id);
  if (q + n < total) flag(Opcode::SET_FLAG, u.id, Pipe::MTE3, Pipe::V, event(kPubFree, qs));
}

// GU(j): O = O * alpha + O_j on each unit's rows, a v2 slice at a time; after the last
// block, O / l (or, split, O, m and l as they are) to GM.
void AttentionEmitter::update(int64_t j) {
  const int64_t f = a_.fifo, slot = j % f;
  for (const Unit& u : units_) {
    flag(Opcode::WAIT_FLAG, u.id, Pipe::FIX, a_.direct ? Pipe::V : Pipe::MTE2, event(kOReady, slot), 0);
    for (int64_t k = 0; k < u.v2_slices; ++k) update_slice(u, j, k);
    if (j + f < task_.blocks)
      flag(Opcode::SET_FLAG, u.id, a_.direct ? Pipe::V : Pipe::MTE2, Pipe::FIX, event(kOFree, slot), 0);
  }
}

void AttentionEmitter::update_slice(const Unit& u, int64_t j, int64_t k) {
  const int64_t n = a_.nbuffer, d = s_.dim;
  const int64_t r0 = u.row0 + k * a_.v2_rows, rows = std::min(a_.v2_rows, u.row0 + u.rows - r0);
  const int64_t r = j * u.v2_slices + k, total = task_.blocks * u.v2_slices, rs = r % n;
  const int64_t unit_row = r0 - u.row0;
  const Operand part = slice_in(u, "pv.ub", "o.ws", j, r0, rows, d, r, kPvFree, kPvLoaded);
  const Operand o = local(buffer("o.ub", u.id), {unit_row, 0}, {rows, d});
  const Operand t = local(buffer("t.ub", u.id), {0, 0}, {rows, d});
  if (j == 0) {
    vec(u.id, Opcode::TVEC, OpKind::Cast, o, {part});
  } else {
    vec(u.id, Opcode::TVEC, OpKind::Mul, t, {o, local(slot_buffer("alpha.ub", j, u.id), {unit_row, 0}, {rows, 1})});
    vec(u.id, Opcode::TVEC, OpKind::Add, o, {t, part});
  }
  if (!a_.direct && r + n < total) flag(Opcode::SET_FLAG, u.id, Pipe::V, Pipe::MTE2, event(kPvFree, rs));
  if (j + 1 < task_.blocks) return;
  const int64_t last = (task_.blocks - 1) % 2;
  const Operand m = local(slot_buffer("m.ub", last, u.id), {unit_row, 0}, {rows, 1});
  const Operand l = local(slot_buffer("l.ub", last, u.id), {unit_row, 0}, {rows, 1});
  auto store = [&](Slot to, const Operand& from, int64_t cols) {
    Instr in;
    in.op = Opcode::TSTORE;
    in.pipe = Pipe::MTE3;
    in.dst = gm(to, {0, 0, r0, 0}, {1, 1, rows, cols});
    in.src = {from};
    push(std::move(in), u.id);
  };
  if (a_.splits > 1) {  // unnormalised, for the combine kernel
    hand_off(u.id, Pipe::V, u.id, Pipe::MTE3, event(kOutReady));
    store(kOut, o, d);
    store(kMPart, m, 1);
    store(kLPart, l, 1);
    return;
  }
  vec(u.id, Opcode::TVEC, OpKind::Div, t, {o, l});
  if (k > 0) flag(Opcode::WAIT_FLAG, u.id, Pipe::MTE3, Pipe::V, event(kOutFree));
  const Operand out = local(buffer("out.ub", u.id), {0, 0}, {rows, d});
  vec(u.id, Opcode::TVEC, OpKind::Cast, out, {t});
  hand_off(u.id, Pipe::V, u.id, Pipe::MTE3, event(kOutReady));
  store(kOut, out, d);
  if (k + 1 < u.v2_slices) flag(Opcode::SET_FLAG, u.id, Pipe::MTE3, Pipe::V, event(kOutFree));
}

void AttentionEmitter::step(int t) {
  int64_t l0 = l0_before(t), l0c = l0c_before(t);
  const int64_t j = t - preload_;
  // In an order that runs on one core too (the CPU runtime runs a block's instructions
  // in order): every stage after the stages it reads.
  if (t < task_.blocks) {
    if (s_.quantized()) {
      dequant(t, true);
      dequant(t, false);
    }
    qk(t, l0, l0c);
    softmax(t);
  }
  if (j >= 0 && j < task_.blocks) {
    pv(j, l0, l0c);
    update(j);
  }
}

void AttentionEmitter::emit_all() {
  prologue();
  for (int t = 0; t < steps(); ++t) step(t);
}

std::vector<int64_t> AttentionEmitter::step_key(int t) const {
  // Near either end of the task the slots' first uses and last releases differ; in
  // between a step differs only by its blocks' masks and widths.
  const int edge = std::max(a_.nbuffer, a_.fifo) + preload_ + 2, from_end = steps() - 1 - t;
  const int64_t j = t - preload_;
  auto ragged = [&](int64_t b) { return b >= 0 && b < task_.blocks && width(b) != a_.kv_tile; };
  const bool qk_here = t < task_.blocks, pv_here = j >= 0 && j < task_.blocks;
  const bool is_masked = qk_here && masked(t);
  std::vector<int64_t> key = {task_.rows, t < edge ? t : -1, from_end < edge ? from_end : -1, is_masked,
                              ragged(t),  ragged(j),         qk_here,                        pv_here};
  // A masked step's instructions differ by where heads start in its rows (one mask
  // instruction per head a slice spans), not by which rows: tasks share its count.
  if (is_masked) key.insert(key.end(), segments_.begin(), segments_.end());
  // int8: how many chunks each unit dequantizes of the last block decides the releases of
  // the steps before it.
  if (s_.quantized())
    for (int vu = 1; vu <= a_.units; ++vu) key.push_back(dequant_chunks(vu, task_.blocks - 1));
  return key;
}

}  // namespace pto::passes
