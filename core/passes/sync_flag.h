// SET_FLAG / WAIT_FLAG construction for codegen: a SET_FLAG issues on its source pipe
// (it fires once that pipe has finished what came before it), a WAIT_FLAG on the pipe
// that waits.
#pragma once

#include "core/program.h"

namespace pto::passes {

inline Instr sync_flag(Opcode op, Pipe src, Pipe dst, int event = 0) {
  Instr in;
  in.op = op;
  in.pipe = op == Opcode::SET_FLAG ? src : dst;
  in.flag_src = src;
  in.flag_dst = dst;
  in.event = event;
  return in;
}

}  // namespace pto::passes
