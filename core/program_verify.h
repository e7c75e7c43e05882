// The one verifier of the PTO program, like LLVM's IR Verifier: every consumer (the
// CPU runtime, the NPU simulator) calls verify_program before it reads a program and
// then trusts what it checks, instead of re-checking the program in its own words.
//
// What a well-formed program is:
//   - ids: tensors, blocks and tasks sit at the index their id names; an alias names
//     a tensor of the program and alias chains end;
//   - the execute graph: every task is listed by exactly one kernel; kernels' `after`,
//     tasks' `deps`, `block` and bindings name existing kernels, tasks, blocks and
//     tensors; the graph has no cycle;
//   - a block program: buffer ids are unique, Fractal layouts sit at L1 or their L0;
//     a local operand names a buffer of the operand's level and its window lies inside
//     the buffer (leading operand dims beyond the buffer's rank have offset 0,
//     extent 1); a GM operand names a binding slot every task of the block has;
//   - instruction forms (the data paths of docs/compiler.md):
//       TLOAD     GM -> L1 | UB
//       TMOV      L1 -> L0A | L0B | UB, UB -> L1 | UB | WS, L0C -> UB | WS, WS -> UB | L1
//       TMATMUL   L0C [m,n] <- L0A [m,k] x L0B [k,n]
//       TVEC      UB <- UB (, UB), or, for CausalMask, UB <- UB, GM position
//       TREDUCE   UB <- UB, reduce_dim inside the source window's rank
//       TFILL     UB <- value
//       TSTORE    GM <- UB | L0C
//       WAIT_FLAG the k-th WAIT_FLAG of a (set unit, src pipe, wait unit, dst pipe, event)
//                 has a k-th SET_FLAG;
//   - units: only a MIX block uses units past 0; an instruction names its own unit's
//     buffers, except the cluster's WS and a TMOV's destination (a direct hand-off).
// What it leaves to the consumers: limits of one consumer that other hardware or
// another runtime would not share (the CPU runtime's panel boundaries, a target's
// core counts) and GM windows against tensor extents (the runtime resolves views).
//
// A malformed program is a compiler bug, so every failure is an Internal Error whose
// message starts "malformed program: " and names the block, instruction and operand.
#pragma once

#include <vector>

#include "core/program.h"

namespace pto {

void verify_program(const Program& program);

// The block program's own checks (buffers, operands, instruction forms, flags),
// without the bindings of the tasks that run it.
void verify_block(const BlockProgram& block);

// For each instruction of the block, the index of the SET_FLAG its WAIT_FLAG waits
// for, -1 for other instructions: the k-th WAIT_FLAG of a (src pipe, dst pipe, event)
// waits for the k-th SET_FLAG of the same key, wherever it sits in the program.
// The block must be verified (every WAIT_FLAG has its SET_FLAG).
std::vector<int> matching_set_flags(const BlockProgram& block);

}  // namespace pto
