// The one way tests write PTO programs by hand, independent of the compiler, for the
// CPU runtime, the simulator and the program verifier alike:
//   - gm(), local(): operands (a local window's offset defaults to the origin);
//     gm_tensor(): a GM tensor;
//   - add_buffer(), add_instr(): append to a BlockProgram; add_instr issues each
//     instruction on the pipe codegen would (docs/compiler.md), so a hand-written
//     program times in the simulator as a compiled one would;
//   - BlockBuilder: one block program, with a method per instruction form;
//   - ProgramBuilder: a whole program (tensors, views, kernels, blocks, tasks), whose
//     buffer()/emit() add to the latest block.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/program.h"

namespace pto::testing {

inline Operand gm(int slot, Shape offset, Shape extent) { return {MemLevel::GM, slot, std::move(offset), std::move(extent)}; }
inline Operand local(MemLevel level, int id, Shape extent, Shape offset = {}) {
  if (offset.empty()) offset.assign(extent.size(), 0);
  return {level, id, std::move(offset), std::move(extent)};
}

// The pipe codegen issues an instruction on (flags: the pipe that sets or waits).
inline Pipe pipe_of(const Instr& in) {
  switch (in.op) {
    case Opcode::TLOAD: return Pipe::MTE2;
    case Opcode::TSTORE: return in.src.empty() || in.src[0].level != MemLevel::L0C ? Pipe::MTE3 : Pipe::FIX;
    case Opcode::TMOV:
      if (in.dst.level == MemLevel::L0A || in.dst.level == MemLevel::L0B) return Pipe::MTE1;
      return !in.src.empty() && in.src[0].level == MemLevel::L0C ? Pipe::FIX : Pipe::V;
    case Opcode::TMATMUL: return Pipe::M;
    case Opcode::SET_FLAG: return in.flag_src;
    case Opcode::WAIT_FLAG: return in.flag_dst;
    default: return Pipe::V;
  }
}

inline GmTensor gm_tensor(int id, std::string name, DType dtype, Shape shape, TensorRole role, int io_index = -1) {
  GmTensor t;
  t.id = id;
  t.name = std::move(name);
  t.role = role;
  t.io_index = io_index;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

inline int add_buffer(BlockProgram& block, int id, std::string name, MemLevel level, DType dtype, Shape shape,
                      Layout layout = Layout::RowMajor) {
  LocalBuffer b;
  b.id = id;
  b.name = std::move(name);
  b.level = level;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.layout = layout;
  // Each after the last of its level, as an allocator without reuse would place them.
  for (const LocalBuffer& placed : block.buffers)
    if (placed.level == b.level) b.byte_offset = std::max(b.byte_offset, placed.byte_offset + placed.bytes());
  block.buffers.push_back(std::move(b));
  return id;
}

inline Instr& add_instr(BlockProgram& block, Opcode op, Operand dst, std::vector<Operand> src = {}) {
  Instr in;
  in.op = op;
  in.dst = std::move(dst);
  in.src = std::move(src);
  in.pipe = pipe_of(in);
  block.instrs.push_back(std::move(in));
  return block.instrs.back();
}

inline Instr& add_flag(BlockProgram& block, Opcode op, Pipe from, Pipe to, int event) {
  Instr& in = add_instr(block, op, {});
  in.flag_src = from;
  in.flag_dst = to;
  in.event = event;
  in.pipe = pipe_of(in);
  return in;
}

class BlockBuilder {
 public:
  BlockBuilder(int id, std::string name, CoreType core) {
    block_.id = id;
    block_.name = std::move(name);
    block_.core = core;
  }
  // A buffer named "buf<id>", ids counting from 0.
  int buffer(MemLevel level, DType dtype, Shape shape) {
    const int id = static_cast<int>(block_.buffers.size());
    return add_buffer(block_, id, "buf" + std::to_string(id), level, dtype, std::move(shape));
  }
  BlockBuilder& load(Operand dst, Operand src) { return add(Opcode::TLOAD, std::move(dst), {std::move(src)}); }
  BlockBuilder& store(Operand dst, Operand src) { return add(Opcode::TSTORE, std::move(dst), {std::move(src)}); }
  // `pipe` overrides the one codegen would pick, to test the simulator's pipes.
  BlockBuilder& move(Pipe pipe, Operand dst, Operand src) {
    add(Opcode::TMOV, std::move(dst), {std::move(src)});
    block_.instrs.back().pipe = pipe;
    return *this;
  }
  BlockBuilder& matmul(Operand dst, Operand a, Operand b, bool accumulate) {
    add(Opcode::TMATMUL, std::move(dst), {std::move(a), std::move(b)});
    block_.instrs.back().accumulate = accumulate;
    return *this;
  }
  BlockBuilder& vec(OpKind op, Operand dst, std::vector<Operand> src) {
    add(Opcode::TVEC, std::move(dst), std::move(src));
    block_.instrs.back().vop = op;
    return *this;
  }
  BlockBuilder& set_flag(Pipe from, Pipe to, int event) {
    add_flag(block_, Opcode::SET_FLAG, from, to, event);
    return *this;
  }
  BlockBuilder& wait_flag(Pipe from, Pipe to, int event) {
    add_flag(block_, Opcode::WAIT_FLAG, from, to, event);
    return *this;
  }
  BlockBuilder& sync(Pipe from, Pipe to, int event) { return set_flag(from, to, event).wait_flag(from, to, event); }
  BlockProgram build() const { return block_; }

 private:
  BlockBuilder& add(Opcode op, Operand dst, std::vector<Operand> src) {
    add_instr(block_, op, std::move(dst), std::move(src));
    return *this;
  }
  BlockProgram block_;
};

class ProgramBuilder {
 public:
  int tensor(const std::string& name, const Shape& shape, DType dtype, TensorRole role = TensorRole::Intermediate,
             int io_index = -1) {
    GmTensor t = gm_tensor(static_cast<int>(p.tensors.size()), name, dtype, shape, role, io_index);
    t.strides = contiguous_strides(shape);
    p.tensors.push_back(t);
    return t.id;
  }
  int view(const std::string& name, int of, const Shape& shape, int64_t elem_offset, const Shape& strides,
           TensorRole role = TensorRole::Intermediate, int io_index = -1) {
    const int id = tensor(name, shape, p.tensors[of].dtype, role, io_index);
    p.tensors[id].alias_of = of;
    p.tensors[id].elem_offset = elem_offset;
    p.tensors[id].strides = strides;
    return id;
  }
  int kernel(const std::string& name, std::vector<int> after = {}, bool cube = false) {
    Kernel k;
    k.id = static_cast<int>(p.kernels.size());
    k.name = name;
    k.after = std::move(after);
    k.uses_cube = cube;
    p.kernels.push_back(k);
    return k.id;
  }
  // Starts a block: buffer() and emit() add to the latest one.
  int block(const std::string& name, CoreType core = CoreType::AIV) {
    BlockProgram b;
    b.id = static_cast<int>(p.blocks.size());
    b.name = name;
    b.core = core;
    p.blocks.push_back(b);
    return b.id;
  }
  int buffer(const std::string& name, MemLevel level, DType dtype, const Shape& shape, Layout layout = Layout::RowMajor) {
    BlockProgram& b = p.blocks.back();
    const int id = static_cast<int>(b.buffers.size()) + 100;  // ids need not be indices
    return add_buffer(b, id, name, level, dtype, shape, layout);
  }
  Instr& emit(Opcode op, Operand dst, std::vector<Operand> src = {}) {
    return add_instr(p.blocks.back(), op, std::move(dst), std::move(src));
  }
  Instr& vec(OpKind vop, Operand dst, std::vector<Operand> src) {
    Instr& in = emit(Opcode::TVEC, std::move(dst), std::move(src));
    in.vop = vop;
    return in;
  }
  // A SET_FLAG and its WAIT_FLAG.
  void flags(Pipe from, Pipe to, int event = 0) {
    add_flag(p.blocks.back(), Opcode::SET_FLAG, from, to, event);
    add_flag(p.blocks.back(), Opcode::WAIT_FLAG, from, to, event);
  }
  // A task of the latest block, listed by `kernel`.
  int task(int kernel, std::vector<TensorBinding> bindings, std::vector<int> deps = {}) {
    Task t;
    t.id = static_cast<int>(p.tasks.size());
    t.kernel = kernel;
    t.block = static_cast<int>(p.blocks.size()) - 1;
    t.core = p.blocks.back().core;
    t.bindings = std::move(bindings);
    t.deps = std::move(deps);
    p.tasks.push_back(t);
    p.kernels[kernel].tasks.push_back(t.id);
    return t.id;
  }
  Program p;
};

}  // namespace pto::testing
