// Pass 5, codegen of a flash_attention task: one MIX block program for a cluster, the
// KV loop unrolled (attention_tiling.h says what a task owns).
//
// Per KV block j the Cube unit computes S_j = Q K_j^T (stage c1) into L0C sub-tiles and
// hands them to the vector units, which run the online softmax on their rows (v1:
// scale, causal mask on blocks that cross the diagonal, row max, the running max m and
// the rescale alpha = exp(m_old - m), P = exp(S - m), the running sum l), and hand P
// back; the Cube computes O_j = P_j V_j (c2) and hands it to the vector units, which
// fold it into O = O * alpha + O_j (v2). After the last block: O / l, stored. A split
// task stores O, m and l unnormalised instead, for the combine kernel.
//
// The stages are software-pipelined as the PTO kernel's are (pto-isa flash_atten,
// qkPreloadNum): the Cube unit runs QK(0..P-1), then QK(j+P), PV(j) for each j, the
// vector units SM(0..P-1), then SM(j+P), GU(j), with P the tiling's preload, so that the
// Cube computes later blocks' scores while the vector units run a block's softmax. A
// block handed between the units (S, P, O_j) and the rescale alpha live P steps, so
// their buffers have P + 1 slots (block j uses slot j % (P + 1)), as the kernel's
// Cube-vector FIFOs do; a unit's own buffers (K, V, L0, UB slices) turn over by
// nbuffer. Flags between the units order each hand-off and each slot's reuse. Hand-offs go through the cluster's
// workspace (WS, in L2) on targets without the direct paths, else L0C -> UB and
// UB -> L1 directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

// What one task owns: its batch and KV head, a range of the head's stacked query rows
// and of its KV blocks, and which split it is.
struct AttentionTask {
  int64_t batch = 0, kv_head = 0;
  int64_t row0 = 0, rows = 0;
  int64_t block0 = 0, blocks = 0;
  int64_t split = 0;
};

// The tasks of the kernel in dispatch order (the tiling's `order`).
std::vector<AttentionTask> attention_tasks(const AttentionSpec& spec, const AttentionTiling& tiling);

// What decides a task's instructions besides its steps: its rows and their split into
// heads (causal masks go per head), its block count and which of its blocks are masked
// or ragged. Tasks with equal keys share one block program.
std::vector<int64_t> attention_block_key(const AttentionSpec& spec, const AttentionTiling& tiling,
                                         const AttentionTask& task);

class AttentionEmitter {
 public:
  AttentionEmitter(const AttentionSpec& spec, const AttentionTiling& tiling, const AttentionTask& task,
                   BlockProgram& block);

  int steps() const;      // pipeline steps: blocks + preload
  void prologue();        // the Q block into L1
  void step(int t);       // QK(t) and SM(t) when t < blocks; PV(t - P) and GU(t - P) when t >= P
  void emit_all();
  // Steps with equal keys emit the same instructions up to offsets, slots and events, in
  // any task of the kernel (the key includes the task's shape): analyze() counts each
  // once.
  std::vector<int64_t> step_key(int t) const;

  // Binding slots of the task's GM operands (attention_bindings() fills them).
  enum Slot { kQ, kK, kV, kOut, kPositions, kKScale, kVScale, kMPart, kLPart, kSlots };

 private:
  // One vector unit's share of the task: rows [row0, row0 + rows) of the task's rows.
  struct Unit {
    int id = 1;
    int64_t row0 = 0, rows = 0;
    int64_t v1_slices = 0, v2_slices = 0;
  };
  const AttentionSpec& s_;
  const AttentionTiling& a_;
  AttentionTask task_;
  BlockProgram& block_;
  int preload_ = 0;
  std::vector<Unit> units_;
  std::vector<int64_t> segments_;    // task rows where a new head starts (for masks)
  int64_t l0_total_ = 0, l0c_total_ = 0;
  int slot_[kSlots] = {};            // binding slot of each GM operand the task has

  int buffer(const std::string& name, int unit = 0) const;
  int slot_buffer(const std::string& name, int64_t index, int unit = 0) const;
  Operand gm(Slot slot, Shape offset, Shape extent) const;
  int64_t width(int64_t j) const;     // columns of the task's block j
  bool masked(int64_t j) const;
  int64_t qk_substeps(int64_t j) const;
  int64_t qk_tiles(int64_t j) const;
  int64_t pv_substeps(int64_t j) const;
  int64_t pv_tiles(int64_t j) const;
  int64_t l0_before(int t) const;     // L0 sub-steps the Cube unit ran before step t
  int64_t l0c_before(int t) const;    // L0C sub-tiles before step t

  void push(Instr in, int unit);
  void flag(Opcode op, int unit, Pipe src, Pipe dst, int event, int peer = -1);
  void hand_off(int set_unit, Pipe src, int wait_unit, Pipe dst, int event);
  void vec(int unit, Opcode op, OpKind vop, Operand dst, std::vector<Operand> src,
           std::optional<double> scalar = std::nullopt, int reduce_dim = -1);
  Operand slice_in(const Unit& u, const std::string& ub, const std::string& ws, int64_t j, int64_t r0, int64_t rows,
                   int64_t cols, int64_t index, int free, int loaded);
  void matmul(const std::string& a_l1, const std::string& b_l1, int64_t rows, int64_t k_len, int64_t n_len,
              const AttentionTiling::L0& l0, int64_t j, bool scores, int64_t& step, int64_t& tile);
  int64_t dequant_tokens(int vu, int64_t j, int64_t* first = nullptr) const;  // vector unit vu's share of block j
  bool dequant_reuses(int vu, int64_t j) const;  // vu's share of block j reuses the slot of block j - n
  bool dequant_released(int vu, int64_t j) const;  // ... and block j + n reuses block j's
  int64_t dequant_chunks(int vu, int64_t j) const;         // vu's dequantization chunks of block j
  int64_t dequant_chunks_before(int vu, int64_t j) const;  // ... of the task's blocks before j
  void dequant(int64_t j, bool key);
  void dequant_chunk(int vu, int64_t j, bool key, int64_t chunk, int64_t a, int64_t cnt);
  void cube_takes_dequantized(int64_t j, bool key);
  void cube_releases_dequantized(int64_t j, bool key);
  Pipe dequantized_reader() const;
  bool cube_loads_kv() const;
  void kv_block_into_l1(int64_t j, bool key);
  void qk(int64_t j, int64_t& step, int64_t& tile);
  void pv(int64_t j, int64_t& step, int64_t& tile);
  void softmax(int64_t j);
  void softmax_slice(const Unit& u, int64_t j, int64_t k);
  void update(int64_t j);
  void update_slice(const Unit& u, int64_t j, int64_t k);
  void mask(const Unit& u, const Operand& dst, const Operand& src, int64_t r0, int64_t rows, int64_t j);
};

// The task's GM bindings, by AttentionEmitter::Slot.
std::vector<TensorBinding> attention_bindings(const AttentionSpec& spec, const AttentionTiling& tiling,
                                              const AttentionTask& task);

}  // namespace pto::passes
