// Pass 5, codegen of a vector task (see codegen_vector.h).
#include "core/passes/codegen_vector.h"

#include "core/passes/sync_flag.h"

namespace pto::passes {

Shape ub_extent(DimMask mask, const Shape& ext) {
  Shape out(ext.size(), 1);
  for (size_t d = 0; d < ext.size(); ++d)
    if (spans(mask, static_cast<int>(d))) out[d] = ext[d];
  return out;
}

Operand gm_window(const GmAccess& a, int slot, const Shape& ext, const Shape& offset) {
  Operand o;
  o.level = MemLevel::GM;
  o.id = slot;
  o.offset.assign(a.dim_map.size(), 0);
  o.extent.assign(a.dim_map.size(), 1);
  for (size_t t = 0; t < a.dim_map.size(); ++t) {
    if (!spans(a.mask, a.dim_map[t])) continue;
    o.extent[t] = ext[a.dim_map[t]];
    o.offset[t] = offset[a.dim_map[t]];
  }
  return o;
}

namespace {

class VectorEmitter {
 public:
  VectorEmitter(const VectorBody& body, const VecTiling& layout, const Shape& ext, BlockProgram& block)
      : body_(body), ext_(ext), block_(block), first_buffer_(body.values.size(), -1) {
    for (size_t i = 0; i < layout.buffers.size(); ++i) {
      const UbBuffer& u = layout.buffers[i];
      const VecValue& v = body.values[u.value];
      LocalBuffer b;
      b.id = static_cast<int>(i);
      b.name = v.name + (v.kind == ValueKind::Load ? ".ub[" + std::to_string(u.slot) + "]" : ".ub");
      b.level = MemLevel::UB;
      b.dtype = v.dtype;
      b.shape = ub_extent(v.mask, layout.tile);
      b.byte_offset = u.offset;
      block.buffers.push_back(std::move(b));
      if (first_buffer_[u.value] < 0) first_buffer_[u.value] = static_cast<int>(i);
    }
  }

  void emit() {
    int slot = 0;
    for (const GmAccess& a : body_.loads) {
      Instr in;
      in.op = Opcode::TLOAD;
      in.pipe = Pipe::MTE2;
      in.dst = local(a.value);
      in.src = {gm_window(a, slot++, ext_, origin())};
      block_.instrs.push_back(std::move(in));
    }
    if (!body_.loads.empty()) sync(Pipe::MTE2, Pipe::V);
    const int first_position = slot;
    slot += static_cast<int>(body_.positions.size());
    for (const VecStep& s : body_.steps) {
      Instr in;
      in.op = s.op;
      in.pipe = Pipe::V;
      in.vop = s.vop;
      in.dst = local(s.dst);
      for (int v : s.src) in.src.push_back(local(v));
      if (s.position >= 0)
        in.src.push_back(gm_window(body_.positions[s.position], first_position + s.position, ext_, origin()));
      in.scalar = s.scalar;
      in.scalar_first = s.scalar_first;
      in.reduce_dim = s.reduce_dim;
      block_.instrs.push_back(std::move(in));
    }
    if (!body_.stores.empty()) sync(Pipe::V, Pipe::MTE3);
    for (const GmAccess& a : body_.stores) {
      Instr in;
      in.op = Opcode::TSTORE;
      in.pipe = Pipe::MTE3;
      in.dst = gm_window(a, slot++, ext_, origin());
      in.src = {local(a.value)};
      block_.instrs.push_back(std::move(in));
    }
  }

 private:
  Shape origin() const { return Shape(ext_.size(), 0); }

  Operand local(int value) const {
    Operand o;
    o.level = MemLevel::UB;
    o.id = first_buffer_[value];
    o.offset.assign(ext_.size(), 0);
    o.extent = ub_extent(body_.values[value].mask, ext_);
    return o;
  }

  void sync(Pipe src, Pipe dst) {
    block_.instrs.push_back(sync_flag(Opcode::SET_FLAG, src, dst));
    block_.instrs.push_back(sync_flag(Opcode::WAIT_FLAG, src, dst));
  }

  const VectorBody& body_;
  const Shape& ext_;
  BlockProgram& block_;
  std::vector<int> first_buffer_;  // per value: its slot-0 buffer
};

TensorBinding bind(const GmAccess& a, const Shape& origin, const std::vector<GmTensor>& tensors) {
  TensorBinding b;
  b.tensor = a.tensor;
  b.origin.assign(tensors[a.tensor].shape.size(), 0);
  for (size_t t = 0; t < a.dim_map.size(); ++t)
    if (spans(a.mask, a.dim_map[t])) b.origin[t] = origin[a.dim_map[t]];
  return b;
}

}  // namespace

void emit_vector_block(const VectorBody& body, const VecTiling& layout, const Shape& ext, BlockProgram& block) {
  VectorEmitter(body, layout, ext, block).emit();
}

std::vector<TensorBinding> vector_bindings(const VectorBody& body, const Shape& origin,
                                           const std::vector<GmTensor>& tensors) {
  std::vector<TensorBinding> out;
  for (const GmAccess& a : body.loads) out.push_back(bind(a, origin, tensors));
  for (const GmAccess& a : body.positions) out.push_back(bind(a, origin, tensors));
  for (const GmAccess& a : body.stores) out.push_back(bind(a, origin, tensors));
  return out;
}

}  // namespace pto::passes
