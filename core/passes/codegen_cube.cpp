// Pass 5, codegen of a Cube task (see codegen_cube.h).
//
// Slots: A's L1 tiles ct.a_slots, B's ct.b_slots, L0A/L0B ct.l0_slots each.
// Event ids: MTE2 -> MTE1 uses the step's slot (step % the larger slot count); MTE1 -> MTE2 uses the A
// slot (0..a_slots-1) or a_slots + the B slot, so that A and B releases pair up
// separately; MTE1 -> M and M -> MTE1 use the L0 slot; M -> FIX uses 0. A SET_FLAG is emitted only
// when a WAIT_FLAG will consume it, so every pair matches within the task.
#include "core/passes/codegen_cube.h"

#include "core/passes/sync_flag.h"

namespace pto::passes {
namespace {

class CubeEmitter {
 public:
  CubeEmitter(const CubeSpec& spec, const CubeTiling& ct, const CubeTaskShape& task,
              const std::vector<GmTensor>& tensors, BlockProgram& block)
      : s_(spec), ct_(ct), na_(ct.a_slots), nb_(ct.b_slots), n0_(ct.l0_slots), task_(task), block_(block),
        rank_(spec.batch.size() + 2) {
    steps_ = ceil_div(task.k, ct.k_step);
    loads_a_ = ceil_div(steps_, ct.ra);
    loads_b_ = ceil_div(steps_, ct.rb);
    mi_ = ceil_div(task.m, ct.mL0);
    ni_ = ceil_div(task.n, ct.nL0);
    for (int64_t s = 0; s < steps_; ++s) substeps_ += mi_ * ni_ * ceil_div(step_k(s), ct.kL0);
    const std::string& a = tensors[spec.a].name;
    const std::string& b = tensors[spec.b].name;
    // Slots of one level sit back to back; A's L1 slots come before B's.
    int64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
    for (int i = 0; i < na_; ++i)
      a_l1_.push_back(buffer(a + ".l1", i, MemLevel::L1, s_.in, {ct.mL1, ct.kAL1}, Layout::FractalA, l1, ct.a_l1));
    for (int i = 0; i < nb_; ++i)
      b_l1_.push_back(buffer(b + ".l1", i, MemLevel::L1, s_.in, {ct.kBL1, ct.nL1}, Layout::FractalB, l1, ct.b_l1));
    for (int i = 0; i < n0_; ++i)
      a_l0_.push_back(buffer(a + ".l0a", i, MemLevel::L0A, s_.in, {ct.mL0, ct.kL0}, Layout::FractalA, l0a, ct.a_l0));
    for (int i = 0; i < n0_; ++i)
      b_l0_.push_back(buffer(b + ".l0b", i, MemLevel::L0B, s_.in, {ct.kL0, ct.nL0}, Layout::FractalB, l0b, ct.b_l0));
    c_l0_ = buffer(tensors[spec.c].name + ".l0c", -1, MemLevel::L0C, s_.acc, {ct.mL1, ct.nL1}, Layout::RowMajor, l0c,
                   ct.c_l0);
  }

  void emit() {
    int64_t j = 0;
    for (int64_t s = 0; s < steps_; ++s) {
      load_step(s);
      const int64_t a_slot = (s / ct_.ra) % na_, b_slot = (s / ct_.rb) % nb_;
      const int64_t ka = (s % ct_.ra) * ct_.k_step, kb = (s % ct_.rb) * ct_.k_step;
      const int64_t kext = step_k(s);
      for (int64_t mi = 0; mi < mi_; ++mi)
        for (int64_t ni = 0; ni < ni_; ++ni)
          for (int64_t kk = 0; kk * ct_.kL0 < kext; ++kk) {
            const int64_t m = std::min(ct_.mL0, task_.m - mi * ct_.mL0);
            const int64_t n = std::min(ct_.nL0, task_.n - ni * ct_.nL0);
            const int64_t k = std::min(ct_.kL0, kext - kk * ct_.kL0);
            const int slot = static_cast<int>(j % n0_);
            if (j >= n0_) push(sync_flag(Opcode::WAIT_FLAG, Pipe::M, Pipe::MTE1, slot));
            push(move(a_l0_[slot], a_l1_[a_slot], {mi * ct_.mL0, ka + kk * ct_.kL0}, {m, k}));
            push(move(b_l0_[slot], b_l1_[b_slot], {kb + kk * ct_.kL0, ni * ct_.nL0}, {k, n}));
            push(sync_flag(Opcode::SET_FLAG, Pipe::MTE1, Pipe::M, slot));
            push(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE1, Pipe::M, slot));
            Instr mm;
            mm.op = Opcode::TMATMUL;
            mm.pipe = Pipe::M;
            mm.dst = local(c_l0_, {mi * ct_.mL0, ni * ct_.nL0}, {m, n});
            mm.src = {local(a_l0_[slot], {0, 0}, {m, k}), local(b_l0_[slot], {0, 0}, {k, n})};
            mm.accumulate = !(s == 0 && kk == 0);
            push(std::move(mm));
            if (j + n0_ < substeps_) push(sync_flag(Opcode::SET_FLAG, Pipe::M, Pipe::MTE1, slot));
            ++j;
          }
      release_l1(s);
    }
    push(sync_flag(Opcode::SET_FLAG, Pipe::M, Pipe::FIX, 0));
    push(sync_flag(Opcode::WAIT_FLAG, Pipe::M, Pipe::FIX, 0));
    Instr store;
    store.op = Opcode::TSTORE;
    store.pipe = Pipe::FIX;
    store.dst = gm(2, 0, 0, task_.m, task_.n);
    store.src = {local(c_l0_, {0, 0}, {task_.m, task_.n})};
    store.accumulate = task_.accumulate;
    push(std::move(store));
  }

 private:
  int64_t step_k(int64_t s) const { return std::min(ct_.k_step, task_.k - s * ct_.k_step); }

  // A buffer at `offset`, which then moves past it.
  int buffer(const std::string& stem, int slot, MemLevel level, DType dtype, Shape shape, Layout layout,
             int64_t& offset, int64_t bytes) {
    LocalBuffer b;
    b.id = static_cast<int>(block_.buffers.size());
    b.name = slot < 0 ? stem : stem + "[" + std::to_string(slot) + "]";
    b.level = level;
    b.dtype = dtype;
    b.shape = std::move(shape);
    b.layout = layout;
    b.byte_offset = offset;
    offset += bytes;
    block_.buffers.push_back(std::move(b));
    return block_.buffers.back().id;
  }

  Operand local(int id, Shape offset, Shape extent) const {
    const LocalBuffer& b = block_.buffers[id];
    return {b.level, id, std::move(offset), std::move(extent)};
  }

  // A window of GM slot `slot` at (rows, cols) of its last two dims, in the tensor's
  // own coordinates (batch dims: offset 0, extent 1).
  Operand gm(int slot, int64_t row, int64_t col, int64_t rows, int64_t cols) const {
    Operand o;
    o.level = MemLevel::GM;
    o.id = slot;
    o.offset.assign(rank_, 0);
    o.extent.assign(rank_, 1);
    o.offset[rank_ - 2] = row;
    o.offset[rank_ - 1] = col;
    o.extent[rank_ - 2] = rows;
    o.extent[rank_ - 1] = cols;
    return o;
  }

  Instr move(int dst, int src, Shape offset, Shape extent) const {
    Instr in;
    in.op = Opcode::TMOV;
    in.pipe = Pipe::MTE1;
    in.dst = local(dst, {0, 0}, extent);
    in.src = {local(src, std::move(offset), extent)};
    return in;
  }

  // The TLOADs of step s (A every ra steps, B every rb), each first waiting for the
  // slot's previous tile to be consumed, then the MTE2 -> MTE1 handover.
  void load_step(int64_t s) {
    const int64_t k0 = s * ct_.k_step;
    if (s % ct_.ra == 0) {
      const int64_t a = s / ct_.ra;
      const int64_t k = std::min(ct_.ra * ct_.k_step, task_.k - k0);
      if (a >= na_) push(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE1, Pipe::MTE2, static_cast<int>(a % na_)));
      push(load(a_l1_[a % na_], s_.transpose_a ? gm(0, k0, 0, k, task_.m) : gm(0, 0, k0, task_.m, k),
                {task_.m, k}, s_.transpose_a));
    }
    if (s % ct_.rb == 0) {
      const int64_t b = s / ct_.rb;
      const int64_t k = std::min(ct_.rb * ct_.k_step, task_.k - k0);
      if (b >= nb_) push(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE1, Pipe::MTE2, static_cast<int>(na_ + b % nb_)));
      push(load(b_l1_[b % nb_], s_.transpose_b ? gm(1, 0, k0, task_.n, k) : gm(1, k0, 0, k, task_.n),
                {k, task_.n}, s_.transpose_b));
    }
    push(sync_flag(Opcode::SET_FLAG, Pipe::MTE2, Pipe::MTE1, static_cast<int>(s % std::max(na_, nb_))));
    push(sync_flag(Opcode::WAIT_FLAG, Pipe::MTE2, Pipe::MTE1, static_cast<int>(s % std::max(na_, nb_))));
  }

  Instr load(int dst, Operand src, Shape extent, bool transpose) const {
    Instr in;
    in.op = Opcode::TLOAD;
    in.pipe = Pipe::MTE2;
    in.dst = local(dst, {0, 0}, std::move(extent));
    in.src = {std::move(src)};
    in.transpose = transpose;
    return in;
  }

  // After the last step that reads an L1 tile, MTE1 hands its slot back to MTE2 —
  // only if a later load reuses the slot.
  void release_l1(int64_t s) {
    const bool last_a = (s + 1) % ct_.ra == 0 || s + 1 == steps_;
    if (last_a && s / ct_.ra + na_ < loads_a_)
      push(sync_flag(Opcode::SET_FLAG, Pipe::MTE1, Pipe::MTE2, static_cast<int>((s / ct_.ra) % na_)));
    const bool last_b = (s + 1) % ct_.rb == 0 || s + 1 == steps_;
    if (last_b && s / ct_.rb + nb_ < loads_b_)
      push(sync_flag(Opcode::SET_FLAG, Pipe::MTE1, Pipe::MTE2, static_cast<int>(na_ + (s / ct_.rb) % nb_)));
  }

  void push(Instr in) { block_.instrs.push_back(std::move(in)); }

  const CubeSpec& s_;
  const CubeTiling& ct_;
  int na_, nb_, n0_;
  const CubeTaskShape& task_;
  BlockProgram& block_;
  size_t rank_;
  int64_t steps_ = 0, loads_a_ = 0, loads_b_ = 0, mi_ = 0, ni_ = 0, substeps_ = 0;
  std::vector<int> a_l1_, b_l1_, a_l0_, b_l0_;
  int c_l0_ = -1;
};

}  // namespace

void emit_cube_block(const CubeSpec& spec, const CubeTiling& ct, const CubeTaskShape& task,
                     const std::vector<GmTensor>& tensors, BlockProgram& block) {
  CubeEmitter(spec, ct, task, tensors, block).emit();
}

std::vector<TensorBinding> cube_bindings(const CubeSpec& spec, const Shape& batch_index, int64_t m0, int64_t n0,
                                         int64_t k0) {
  auto at = [&](int64_t row, int64_t col) {
    Shape origin = batch_index;
    origin.push_back(row);
    origin.push_back(col);
    return origin;
  };
  return {{spec.a, spec.transpose_a ? at(k0, m0) : at(m0, k0)},
          {spec.b, spec.transpose_b ? at(n0, k0) : at(k0, n0)},
          {spec.c, at(m0, n0)}};
}

}  // namespace pto::passes
