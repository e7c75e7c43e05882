// The PTO program: what the compiler produces and three consumers read — the cost
// model (through analyze's summary), the NPU simulator (timing) and the CPU runtime
// (values and real time).
//
// Map of the structure, from the outside in:
//   Program      GM tensors, fused kernels, block programs, and the execute graph (tasks)
//   Kernel       one fused group of graph nodes; its tasks may not start before the
//                kernels in `after` have finished (an unfused partition's barrier)
//   Task         one tile of a kernel run on one core: which block program, which core
//                type, which GM tensor windows (bindings) and which tasks it waits for
//   BlockProgram straight-line PTO instructions over local buffers, shared by every
//                isomorphic task (same tile shapes, tails included)
//   Instr        TLOAD/TMOV/TMATMUL/TVEC/TREDUCE/TFILL/TSTORE/SET_FLAG/WAIT_FLAG, each on
//                one pipe of one unit; flags order the pipes of one core, and of the
//                units of one cluster
//
// A MIX task (flash_attention) runs on a cluster: unit 0 is a Cube core (AIC), units 1..
// the Vector cores paired with it (two per AIC on the 910B); on targets without split
// cores every unit is the one core. Its Cube and Vector halves hand tiles to each other
// directly (FIX L0C -> UB, MTE3 UB -> L1) where the target has those paths (cv_direct),
// else through a per-cluster workspace in GM (level WS) that stays in L2.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/target.h"
#include "core/tensor_graph.h"

namespace pto {

// WS: a cluster's workspace in GM for Cube <-> Vector hand-offs, small enough to stay in
// L2 (a local buffer of the task: no tensor holds it).
enum class MemLevel { GM, L1, L0A, L0B, L0C, UB, WS };
enum class Pipe { S, MTE1, MTE2, MTE3, M, V, FIX };
constexpr int kNumPipes = 7;
const char* mem_level_name(MemLevel l);   // "GM", "L1", "L0A", ...
const char* pipe_name(Pipe p);            // "S", "MTE1", ...

// How a local buffer holds a 2-D matrix operand. FractalA/FractalB are the Cube's
// operand formats (Nz/Zn on the NPU; packed micro-panels on the CPU); the runtime
// chooses the physical packing, the compiler only says which role the buffer plays.
enum class Layout { RowMajor, FractalA, FractalB };

enum class Opcode {
  TLOAD,      // GM -> L1 or UB                       (MTE2)
  TMOV,       // L1 -> L0A/L0B (MTE1); L0C -> UB (FIX); UB -> UB copy (V); UB -> L1 (MTE3);
              // L0C -> WS (FIX), WS -> UB / L1 (MTE2), UB -> WS (MTE3)
  TMATMUL,    // L0C (+)= L0A x L0B                   (M)
  TVEC,       // elementwise / broadcast / cast / causal mask on UB  (V)
  TREDUCE,    // sum/max/min over one tile dim on UB  (V)
  TFILL,      // set a UB region to a constant         (V)
  TSTORE,     // UB -> GM (MTE3); L0C -> GM (FIX)
  SET_FLAG,   // flag_src pipe signals event to flag_dst pipe
  WAIT_FLAG,  // flag_dst pipe waits for the event from flag_src
};
const char* opcode_name(Opcode op);

// A rectangular window of a GM tensor (level GM, id = binding slot of the task,
// offset relative to the binding's origin) or of a local buffer (id = buffer id,
// offset within the buffer). `extent` is the valid region; for a tail tile it is
// smaller than the buffer. In vector ops a source dim of extent 1 broadcasts.
struct Operand {
  MemLevel level = MemLevel::GM;
  int id = -1;
  Shape offset;
  Shape extent;
};

struct Instr {
  Opcode op = Opcode::TVEC;
  Pipe pipe = Pipe::V;
  Operand dst;
  std::vector<Operand> src;

  OpKind vop = OpKind::Add;          // TVEC/TREDUCE: which op (Cast: to dst buffer dtype)
  std::optional<double> scalar;      // TVEC tensor-scalar form; TFILL value
  bool scalar_first = false;
  int reduce_dim = -1;               // TREDUCE: dim of the tile reduced (extent 1 in dst)
  bool transpose = false;            // TLOAD, TMOV WS -> L1: the source holds the operand with its last two dims swapped
  bool accumulate = false;           // TMATMUL: add into dst; TSTORE: atomic add into GM
  int unit = 0;                      // which unit of a MIX task's cluster runs it (0 otherwise)
  Pipe flag_src = Pipe::S;           // SET_FLAG/WAIT_FLAG
  Pipe flag_dst = Pipe::S;
  int event = 0;
  // SET_FLAG: the unit that waits; WAIT_FLAG: the unit that set it. -1: the same unit.
  int flag_peer = -1;
  int set_unit() const { return op == Opcode::SET_FLAG || flag_peer < 0 ? unit : flag_peer; }
  int wait_unit() const { return op == Opcode::WAIT_FLAG || flag_peer < 0 ? unit : flag_peer; }

  std::string mnemonic() const;      // "TLOAD", "TADD", "TADDS", "TEXP", "TREDUCE_SUM", ...
};

struct LocalBuffer {
  int id = -1;
  std::string name;                  // tensor name + role + slot, e.g. "x.ub[1]"
  MemLevel level = MemLevel::UB;
  DType dtype = DType::F32;
  Shape shape;                       // capacity, as a full tile
  Layout layout = Layout::RowMajor;
  int unit = 0;                      // MIX blocks: the unit whose memory holds it (WS: the cluster's, 0)
  int64_t byte_offset = 0;           // placement inside its level (and unit), from the allocator
  int64_t bytes() const;             // elements * dtype size, fractal-aligned for Cube layouts
  // Same level of the same unit, and its bytes overlap `other`'s (the allocator reuses
  // bytes by liveness).
  bool shares_bytes(const LocalBuffer& other) const;
};

// Whether [a, a + a_bytes) and [b, b + b_bytes) overlap.
inline bool byte_ranges_overlap(int64_t a, int64_t a_bytes, int64_t b, int64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

// Bytes covered by the union of [begin, end) ranges, overlaps counted once.
int64_t union_bytes(std::vector<std::pair<int64_t, int64_t>> ranges);

struct BlockProgram {
  int id = -1;
  std::string name;
  CoreType core = CoreType::AIV;
  // A core runs this block's tasks one after another: the task overlaps its own loop
  // steps (a streamed kernel cycles its buffer slots chunk by chunk), so a newer task
  // could not have any slot of its own.
  bool sequential_tasks = false;
  std::vector<LocalBuffer> buffers;
  std::vector<Instr> instrs;
  // Highest byte used per local level (byte_offset + bytes over its buffers).
  std::map<MemLevel, int64_t> footprint() const;
};

enum class TensorRole { Input, Output, Intermediate };

struct GmTensor {
  int id = -1;
  std::string name;                  // the graph node's name
  NodeId node = -1;                  // the graph node whose value it holds
  TensorRole role = TensorRole::Intermediate;
  int io_index = -1;                 // position among graph inputs / outputs
  DType dtype = DType::F32;
  Shape shape;
  // Views share storage: element (i0..in) lives at alias_of's storage
  // [elem_offset + sum(i_d * strides[d])]. alias_of = -1: owns contiguous storage.
  int alias_of = -1;
  int64_t elem_offset = 0;
  Shape strides;                     // in elements; 0 for broadcast dims
};

struct TensorBinding {
  int tensor = -1;                   // GmTensor id
  Shape origin;                      // element offset of the task's window
};

struct Task {
  int id = -1;
  int kernel = -1;
  int block = -1;
  CoreType core = CoreType::AIV;
  std::vector<TensorBinding> bindings;  // GM operand slot -> tensor window
  std::vector<int> deps;             // tasks (of the same kernel) that must finish first
  Shape tile_index;                  // position in the kernel's tile grid
};

struct Kernel {
  int id = -1;
  std::string name;
  std::vector<NodeId> nodes;         // fused graph nodes
  std::vector<int> after;            // kernels that must finish before any task starts
  std::vector<int> tasks;            // in dispatch order (L2 grouping applied)
  bool uses_cube = false;
};

struct Program {
  std::string target;                // Target::name it was compiled for
  std::vector<GmTensor> tensors;
  std::vector<Kernel> kernels;
  std::vector<BlockProgram> blocks;
  std::vector<Task> tasks;           // ids index this vector

  int64_t instruction_count() const; // executed instructions over all tasks
  std::string dump_blocks() const;   // --emit program
  std::string dump_exec() const;     // --emit exec
};

}  // namespace pto
