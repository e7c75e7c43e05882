// Pass 5, codegen of a streamed vector task (see codegen_stream.h).
#include "core/passes/codegen_stream.h"

#include <algorithm>

#include "core/error.h"
#include "core/passes/codegen_vector.h"
#include "core/passes/sync_flag.h"
#include "core/passes/vector_instr.h"
#include "core/passes/ub_allocation.h"

namespace pto::passes {
namespace {

OpKind combine_of(OpKind reduction) {
  return reduction == OpKind::Sum ? OpKind::Add : reduction == OpKind::Amax ? OpKind::Max : OpKind::Min;
}

std::string pass_suffix(int pass) { return ".p" + std::to_string(pass); }

}  // namespace

StreamEmitter::StreamEmitter(const VectorBody& body, const VecTiling& layout, const Shape& ext, int nbuffer,
                             BlockProgram& block)
    : body_(body), layout_(layout), plan_(*layout.stream), ext_(ext), nbuffer_(nbuffer), block_(block) {
  row_buffer_.assign(body.values.size(), -1);
  load_slots_.assign(body.values.size(), {});
  pass_buffer_.assign(plan_.passes.size(), std::vector<int>(body.values.size(), -1));
  for (size_t i = 0; i < layout.buffers.size(); ++i) {
    const UbBuffer& u = layout.buffers[i];
    LocalBuffer b;
    b.id = static_cast<int>(i);
    b.level = MemLevel::UB;
    b.byte_offset = u.offset;
    if (u.value < 0) {
      b.name = u.scratch;
      b.dtype = u.dtype;
      b.shape = ub_extent(u.mask, layout.tile);
      scratch_.emplace_back(u.scratch, b.id);
    } else {
      const VecValue& v = body.values[u.value];
      b.dtype = v.dtype;
      b.shape = ub_extent(v.mask, layout.tile);
      const bool chunk_load = v.kind == ValueKind::Load && spans(v.mask, plan_.dim);
      if (u.pass >= 0) {
        b.name = v.name + pass_suffix(u.pass);
        pass_buffer_[u.pass][u.value] = b.id;
      } else if (chunk_load) {
        b.name = v.name + ".ub[" + std::to_string(u.slot) + "]";
        load_slots_[u.value].push_back(b.id);
      } else {
        b.name = v.name + ".ub";
        row_buffer_[u.value] = b.id;
      }
    }
    block.buffers.push_back(std::move(b));
  }
  for (const StreamPass& pass : plan_.passes)
    if (pass.loads.empty()) internal_error("streamed kernel: a pass without chunk inputs");
}

int StreamEmitter::scratch(const std::string& name) const {
  for (const auto& [n, id] : scratch_)
    if (n == name) return id;
  internal_error("streamed kernel: no scratch buffer '" + name + "'");
}

int64_t StreamEmitter::total_chunks() const {
  return static_cast<int64_t>(plan_.passes.size()) * layout_.chunks.count;
}

Shape StreamEmitter::chunk_ext(int64_t c) const {
  Shape e = ext_;
  e[plan_.dim] = layout_.chunks.extent(c);
  return e;
}

Shape StreamEmitter::chunk_offset(int64_t c) const {
  Shape o(ext_.size(), 0);
  o[plan_.dim] = c * layout_.chunks.tile;
  return o;
}

Operand StreamEmitter::row_operand(int buffer) const {
  const LocalBuffer& b = block_.buffers[buffer];
  Shape e = ext_;
  e[plan_.dim] = 1;
  for (size_t d = 0; d < e.size(); ++d) e[d] = std::min(e[d], b.shape[d]);
  return {MemLevel::UB, buffer, Shape(e.size(), 0), e};
}

Operand StreamEmitter::chunk_operand(int buffer, int64_t c) const {
  const LocalBuffer& b = block_.buffers[buffer];
  Shape e = chunk_ext(c);
  for (size_t d = 0; d < e.size(); ++d) e[d] = std::min(e[d], b.shape[d]);
  return {MemLevel::UB, buffer, Shape(e.size(), 0), e};
}

// A body value as chunk c of `pass` reads it: its slot, its chunk buffer, or its row buffer.
Operand StreamEmitter::value_operand(int pass, int value, int64_t c) const {
  if (!load_slots_[value].empty()) {
    const int64_t g = pass * layout_.chunks.count + c;
    return chunk_operand(load_slots_[value][g % nbuffer_], c);
  }
  if (pass >= 0 && pass_buffer_[pass][value] >= 0) return chunk_operand(pass_buffer_[pass][value], c);
  if (row_buffer_[value] < 0) internal_error("streamed kernel: \"" + body_.values[value].name + "\" has no buffer");
  return row_operand(row_buffer_[value]);
}

// Of an accumulator's two halves, the one chunk c writes: they alternate so that the last
// chunk writes `home`.
int StreamEmitter::half(int home, int spare, int64_t c, int64_t chunks) const {
  return (chunks - 1 - c) % 2 == 0 ? home : spare;
}

void StreamEmitter::vec(Opcode op, OpKind vop, Operand dst, std::vector<Operand> src, std::optional<double> scalar,
                        int reduce_dim) {
  block_.instrs.push_back(vector_instr(op, vop, std::move(dst), std::move(src), scalar, reduce_dim));
}

void StreamEmitter::prologue() {
  for (int l : plan_.row_loads) {
    Instr in;
    in.op = Opcode::TLOAD;
    in.pipe = Pipe::MTE2;
    in.dst = row_operand(row_buffer_[body_.loads[l].value]);
    in.src = {gm_window(body_.loads[l], l, ext_, Shape(ext_.size(), 0))};
    block_.instrs.push_back(std::move(in));
  }
  if (!plan_.row_loads.empty()) {
    block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, Pipe::MTE2, Pipe::V));
    block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE2, Pipe::V));
  }
  for (int step : plan_.row_steps) row_step(step);
}

void StreamEmitter::row_step(int step) {
  const VecStep& s = body_.steps[step];
  std::vector<Operand> src;
  for (int v : s.src) src.push_back(value_operand(-1, v, 0));
  vec(s.op, s.vop, row_operand(row_buffer_[s.dst]), std::move(src), s.scalar, s.reduce_dim);
  block_.instrs.back().scalar_first = s.scalar_first;
}

// Folds chunk c into a reduction: the first chunk reduces into the accumulator, later
// ones into a partial that the combine adds (or maxes) into the running value.
void StreamEmitter::fold(int step, int64_t c, int64_t chunks) {
  const VecStep& s = body_.steps[step];
  const std::string& name = body_.values[s.dst].name;
  const int home = row_buffer_[s.dst], spare = scratch(name + ".acc");
  const Operand src = value_operand(current_pass_, s.src[0], c);
  const int now = half(home, spare, c, chunks);
  if (c == 0) return vec(Opcode::TREDUCE, s.vop, row_operand(now), {src}, std::nullopt, s.reduce_dim);
  const int part = scratch(name + ".part");
  vec(Opcode::TREDUCE, s.vop, row_operand(part), {src}, std::nullopt, s.reduce_dim);
  vec(Opcode::TVEC, combine_of(s.vop), row_operand(now), {row_operand(now == home ? spare : home), row_operand(part)});
}

// Running max m and sum l of exp(x - m): each chunk raises m to its own max and rescales
// the sum so far by exp(old m - new m) before adding the chunk's.
void StreamEmitter::merge_softmax(const OnlineMerge& m, int64_t c, int64_t chunks) {
  const VecStep& first = body_.steps[m.first];
  const VecStep& second = body_.steps[m.second];
  const std::string& a = body_.values[first.dst].name;
  const std::string& b = body_.values[second.dst].name;
  const int d = plan_.dim;
  const Operand x = value_operand(current_pass_, m.source, c);
  const int m_now = half(row_buffer_[first.dst], scratch(a + ".acc"), c, chunks);
  const int m_before = m_now == row_buffer_[first.dst] ? scratch(a + ".acc") : row_buffer_[first.dst];
  const int l_now = half(row_buffer_[second.dst], scratch(b + ".acc"), c, chunks);
  const int l_before = l_now == row_buffer_[second.dst] ? scratch(b + ".acc") : row_buffer_[second.dst];
  const Operand shifted = chunk_operand(scratch(b + ".shifted"), c), exps = chunk_operand(scratch(b + ".exp"), c);
  if (c == 0) {
    vec(Opcode::TREDUCE, OpKind::Amax, row_operand(m_now), {x}, std::nullopt, d);
  } else {
    const Operand chunk_max = row_operand(scratch(a + ".chunk"));
    vec(Opcode::TREDUCE, OpKind::Amax, chunk_max, {x}, std::nullopt, d);
    vec(Opcode::TVEC, OpKind::Max, row_operand(m_now), {row_operand(m_before), chunk_max});
    vec(Opcode::TVEC, OpKind::Sub, row_operand(scratch(a + ".drop")), {row_operand(m_before), row_operand(m_now)});
    vec(Opcode::TVEC, OpKind::Exp, row_operand(scratch(a + ".alpha")), {row_operand(scratch(a + ".drop"))});
  }
  vec(Opcode::TVEC, OpKind::Sub, shifted, {x, row_operand(m_now)});
  vec(Opcode::TVEC, OpKind::Exp, exps, {shifted});
  if (c == 0) return vec(Opcode::TREDUCE, OpKind::Sum, row_operand(l_now), {exps}, std::nullopt, d);
  const Operand chunk_sum = row_operand(scratch(b + ".chunk")), scaled = row_operand(scratch(b + ".scaled"));
  vec(Opcode::TREDUCE, OpKind::Sum, chunk_sum, {exps}, std::nullopt, d);
  vec(Opcode::TVEC, OpKind::Mul, scaled, {row_operand(l_before), row_operand(scratch(a + ".alpha"))});
  vec(Opcode::TVEC, OpKind::Add, row_operand(l_now), {scaled, chunk_sum});
}

// Chan's parallel variance: each chunk's own mean and M2 (two-pass over the chunk, in
// UB), combined with the running ones: delta = chunk mean - mean, mean += delta * nc/n,
// M2 += chunk M2 + delta^2 * n_before*nc/n. Nothing subtracts two large sums, so the
// variance keeps fp32's accuracy where sum(x^2) - sum(x)^2/n would cancel. The row is
// first shifted by its own first element, so that the sums run over values of the
// spread's size, not the mean's: summing 1e4-sized values in fp32 would lose the very
// digits the variance is made of (the shift comes back in the mean at the end).
void StreamEmitter::merge_variance(const OnlineMerge& m, int64_t c, int64_t chunks) {
  const VecStep& second = body_.steps[m.second];
  const std::string& a = body_.values[body_.steps[m.first].dst].name;
  const std::string& b = body_.values[second.dst].name;
  const int d = plan_.dim;
  const Operand x = value_operand(current_pass_, m.source, c);
  const double nc = static_cast<double>(layout_.chunks.extent(c));
  const double before = static_cast<double>(c * layout_.chunks.tile), total = before + nc;
  const int mean_now = half(scratch(a + ".mean[0]"), scratch(a + ".mean[1]"), c, chunks);
  const int mean_before = mean_now == scratch(a + ".mean[0]") ? scratch(a + ".mean[1]") : scratch(a + ".mean[0]");
  const int m2_now = half(row_buffer_[second.dst], scratch(b + ".acc"), c, chunks);
  const int m2_before = m2_now == row_buffer_[second.dst] ? scratch(b + ".acc") : row_buffer_[second.dst];
  const Operand shift = row_operand(scratch(a + ".shift")), chunk_sum = row_operand(scratch(a + ".chunk"));
  const Operand chunk_mean = c == 0 ? row_operand(mean_now) : row_operand(scratch(a + ".chunk_mean"));
  const Operand chunk_m2 = c == 0 ? row_operand(m2_now) : row_operand(scratch(b + ".chunk"));
  const Operand centered = chunk_operand(scratch(b + ".centered"), c);
  const Operand dev = chunk_operand(scratch(b + ".dev"), c), sq = chunk_operand(scratch(b + ".sq"), c);
  if (c == 0) {
    Operand first = x;
    first.extent[d] = 1;
    vec(Opcode::TVEC, OpKind::Cast, shift, {first});
  }
  vec(Opcode::TVEC, OpKind::Sub, centered, {x, shift});
  vec(Opcode::TREDUCE, OpKind::Sum, chunk_sum, {centered}, std::nullopt, d);
  vec(Opcode::TVEC, OpKind::Mul, chunk_mean, {chunk_sum}, 1.0 / nc);
  vec(Opcode::TVEC, OpKind::Sub, dev, {centered, chunk_mean});
  vec(Opcode::TVEC, OpKind::Mul, sq, {dev, dev});
  vec(Opcode::TREDUCE, OpKind::Sum, chunk_m2, {sq}, std::nullopt, d);
  if (c == 0) return;
  const Operand delta = row_operand(scratch(a + ".delta")), step = row_operand(scratch(a + ".step"));
  const Operand delta_sq = row_operand(scratch(a + ".delta_sq")), weighted = row_operand(scratch(b + ".weighted"));
  const Operand sum = row_operand(scratch(b + ".sum"));
  vec(Opcode::TVEC, OpKind::Sub, delta, {chunk_mean, row_operand(mean_before)});
  vec(Opcode::TVEC, OpKind::Mul, step, {delta}, nc / total);
  vec(Opcode::TVEC, OpKind::Add, row_operand(mean_now), {row_operand(mean_before), step});
  vec(Opcode::TVEC, OpKind::Mul, delta_sq, {delta, delta});
  vec(Opcode::TVEC, OpKind::Mul, weighted, {delta_sq}, before * nc / total);
  vec(Opcode::TVEC, OpKind::Add, sum, {row_operand(m2_before), chunk_m2});
  vec(Opcode::TVEC, OpKind::Add, row_operand(m2_now), {sum, weighted});
}

void StreamEmitter::chunk(int pass, int64_t c) {
  const StreamPass& p = plan_.passes[pass];
  const int64_t chunks = layout_.chunks.count, g = pass * chunks + c;
  const int slot = static_cast<int>(g % nbuffer_);
  current_pass_ = pass;
  if (g >= nbuffer_) block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::V, Pipe::MTE2, slot));
  for (int l : p.loads) {
    Instr in;
    in.op = Opcode::TLOAD;
    in.pipe = Pipe::MTE2;
    in.dst = value_operand(pass, body_.loads[l].value, c);
    in.src = {gm_window(body_.loads[l], l, chunk_ext(c), chunk_offset(c))};
    block_.instrs.push_back(std::move(in));
  }
  block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, Pipe::MTE2, Pipe::V, slot));
  block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE2, Pipe::V, slot));
  const bool after_store = c > 0 ? !p.stores.empty() : pass > 0 && !plan_.passes[pass - 1].stores.empty();
  if (after_store) block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE3, Pipe::V));
  const int first_position = static_cast<int>(body_.loads.size());
  for (int step : p.steps) {
    const VecStep& s = body_.steps[step];
    std::vector<Operand> src;
    for (int v : s.src) src.push_back(value_operand(pass, v, c));
    if (s.position >= 0)
      src.push_back(gm_window(body_.positions[s.position], first_position + s.position, chunk_ext(c), chunk_offset(c)));
    vec(s.op, s.vop, value_operand(pass, s.dst, c), std::move(src), s.scalar, s.reduce_dim);
    block_.instrs.back().scalar_first = s.scalar_first;
  }
  for (int step : p.reductions) fold(step, c, chunks);
  for (const OnlineMerge& m : p.merges)
    m.kind == MergeKind::SoftmaxSum ? merge_softmax(m, c, chunks) : merge_variance(m, c, chunks);
  if (g + nbuffer_ < total_chunks()) block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, Pipe::V, Pipe::MTE2, slot));
  if (p.stores.empty()) return;
  block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, Pipe::V, Pipe::MTE3));
  block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::V, Pipe::MTE3));
  const int first_store = first_position + static_cast<int>(body_.positions.size());
  for (int st : p.stores) {
    Instr in;
    in.op = Opcode::TSTORE;
    in.pipe = Pipe::MTE3;
    in.dst = gm_window(body_.stores[st], first_store + st, chunk_ext(c), chunk_offset(c));
    in.src = {value_operand(pass, body_.stores[st].value, c)};
    block_.instrs.push_back(std::move(in));
  }
  block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, Pipe::MTE3, Pipe::V));
}

void StreamEmitter::after_pass(int pass) {
  const StreamPass& p = plan_.passes[pass];
  const int64_t chunks = layout_.chunks.count;
  for (const OnlineMerge& m : p.merges) {
    if (m.kind != MergeKind::Variance) continue;
    const VecStep& first = body_.steps[m.first];
    const std::string& a = body_.values[first.dst].name;
    const int mean = half(scratch(a + ".mean[0]"), scratch(a + ".mean[1]"), chunks - 1, chunks);
    const Operand mean_x = row_operand(scratch(a + ".mean_x"));
    vec(Opcode::TVEC, OpKind::Add, mean_x, {row_operand(mean), row_operand(scratch(a + ".shift"))});
    vec(Opcode::TVEC, OpKind::Mul, row_operand(row_buffer_[first.dst]), {mean_x},
        static_cast<double>(body_.iteration[plan_.dim]));
  }
  for (int step : p.row_steps) row_step(step);
}

void StreamEmitter::epilogue() {
  if (!plan_.passes.back().stores.empty()) block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE3, Pipe::V));
  const std::vector<int>& stores = plan_.passes.back().row_stores;
  if (stores.empty()) return;
  block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, Pipe::V, Pipe::MTE3));
  block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, Pipe::V, Pipe::MTE3));
  const int first_store = static_cast<int>(body_.loads.size() + body_.positions.size());
  for (int st : stores) {
    Instr in;
    in.op = Opcode::TSTORE;
    in.pipe = Pipe::MTE3;
    in.dst = gm_window(body_.stores[st], first_store + st, chunk_ext(0), Shape(ext_.size(), 0));
    in.src = {row_operand(row_buffer_[body_.stores[st].value])};
    block_.instrs.push_back(std::move(in));
  }
}

void StreamEmitter::emit_all() {
  prologue();
  for (int p = 0; p < static_cast<int>(plan_.passes.size()); ++p) {
    for (int64_t c = 0; c < layout_.chunks.count; ++c) chunk(p, c);
    after_pass(p);
  }
  epilogue();
}

std::vector<std::pair<int64_t, int64_t>> StreamEmitter::chunk_classes(int pass) const {
  const int64_t chunks = layout_.chunks.count, total = total_chunks();
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t middle = -1, middle_count = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t g = pass * chunks + c;
    // The first two chunks (the first folds nothing in; the second waits for a store
    // of the first), the last (the tail), and those whose slot wait or release differs.
    const bool alone = c <= 1 || c + 1 == chunks || g < nbuffer_ || g + nbuffer_ >= total;
    if (alone) {
      out.emplace_back(c, 1);
    } else {
      if (middle < 0) middle = c;
      ++middle_count;
    }
  }
  if (middle >= 0) out.emplace_back(middle, middle_count);
  return out;
}

void emit_stream_block(const VectorBody& body, const VecTiling& layout, const Shape& ext, int nbuffer,
                       BlockProgram& block) {
  block.sequential_tasks = true;
  StreamEmitter(body, layout, ext, nbuffer, block).emit_all();
}

}  // namespace pto::passes
