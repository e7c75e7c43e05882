// A vector-pipe instruction (TVEC or TREDUCE) for codegen: every vector op the emitters
// write differs only in these fields.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/program.h"

namespace pto::passes {

inline Instr vector_instr(Opcode op, OpKind vop, Operand dst, std::vector<Operand> src,
                          std::optional<double> scalar = std::nullopt, int reduce_dim = -1) {
  Instr in;
  in.op = op;
  in.pipe = Pipe::V;
  in.vop = vop;
  in.dst = std::move(dst);
  in.src = std::move(src);
  in.scalar = scalar;
  in.reduce_dim = reduce_dim;
  return in;
}

}  // namespace pto::passes
