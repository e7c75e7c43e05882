// DecodedBlock: a BlockProgram decoded once per executor into steps the task loop runs directly.
//
// Decoding resolves what does not change from task to task: each local buffer's
// storage (lane type, panel or row-major layout, offset in the thread's scratch
// arena), each local operand's byte offset and strides (already matched against the
// step's iteration extent, broadcasts included), which of the instruction forms a
// step is, and whether TMOV L1 -> L0A/L0B may hand out a view into L1 instead of
// copying. Flags are dropped: a thread runs one task's instructions in program order,
// which every flag already allows. Only GM addresses wait for the task's bindings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/program.h"
#include "core/runtime/strided.h"

namespace pto::runtime {

struct DecodedBuffer {
  int id = -1;
  std::string name;
  MemLevel level = MemLevel::UB;
  DType dtype = DType::F32;       // declared
  DType lane = DType::F32;        // stored as: F32 or I32
  Dims shape;                     // capacity
  int panel_width = 0;            // 8 (A panels), 16 (B panels), 0: row-major
  int64_t panel_stride = 0;       // floats between panels
  Dims strides;                   // row-major element strides (row-major buffers)
  int64_t arena_offset = 0;       // bytes into the thread's arena, 64-byte aligned
  int64_t bytes = 0;
  bool l0_view = false;           // L0A/L0B whose TMOVs all hand out views into L1
};

enum class StepKind : uint8_t {
  LoadPanels,  // TLOAD GM -> A/B panels
  LoadRows,    // TLOAD GM -> row-major buffer
  MovView,     // TMOV L1 panels -> L0A/L0B as a view
  MovPanels,   // TMOV -> L0A/L0B as a copy
  Matmul,      // TMATMUL
  Vector,      // TVEC (and TMOV between row-major buffers, as a Cast)
  Reduce,      // TREDUCE
  Fill,        // TFILL
  Mask,        // TVEC CausalMask
  Store,       // TSTORE
};

// A local operand: `extent` is the step's iteration extent for the destination; for a
// source, `strides` are already aligned to the destination's extent.
struct LocalOperand {
  int buf = -1;                   // index into DecodedBlock::buffers
  Dims offset;                    // in the buffer's rank
  Dims extent;                    // in the buffer's rank
  int64_t byte_offset = 0;        // arena_offset + the window's offset (row-major buffers)
  Dims strides;                   // for iterating the step's extent
};

// A GM operand as written: binding slot and window in the tensor's coordinates.
struct GmOperand {
  int slot = -1;
  Shape offset;
  Shape extent;
};

struct Step {
  StepKind kind = StepKind::Vector;
  int instr = -1;                 // index in the block program, for messages
  LocalOperand dst, a, b;         // b unused unless a binary TVEC / TMATMUL
  bool has_b = false;
  GmOperand gm;                   // TLOAD source, TSTORE destination, mask position
  Dims extent;                    // iteration extent of Vector/Reduce/Fill/Mask steps
  OpKind vop = OpKind::Add;
  std::optional<double> scalar;
  bool scalar_first = false;
  int reduce_dim = -1;            // in `extent`'s dims
  bool transpose = false;
  bool accumulate = false;
  bool clear_first = false;       // LoadPanels/MovPanels of a ragged tile: zero the buffer first
};

struct DecodedBlock {
  int block = -1;
  std::string name;
  std::vector<DecodedBuffer> buffers;
  std::vector<Step> steps;
  std::vector<std::string> labels;  // per step: "block 'mm' instr 12 (TMATMUL)", for errors
  int64_t arena_bytes = 0;
};

// Internal Error naming the block, instruction and operand for anything the runtime
// cannot execute (unknown buffer, window outside its buffer, mismatched extents).
DecodedBlock decode_block(const BlockProgram& block);

}  // namespace pto::runtime
