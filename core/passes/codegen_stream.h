// Pass 5, codegen of a streamed vector task: a split reduction (stream_plan.h) over the
// chunks of one task's rows.
//
// Per pass, per chunk: TLOAD the chunk inputs into slot (chunk % n) — the load waits
// for the chunk n before it to release the slot (V -> MTE2), so MTE2 runs up to n - 1
// chunks ahead of the vector unit; the chunk steps; each reduction folded into its
// accumulator (TREDUCE into a partial, then TADD / TMAX / TMIN with the running value,
// the two halves of the accumulator alternating so that the last chunk writes the
// value's own buffer); the online merges' rescaling steps; and the chunk's stored
// values (TSTORE, MTE3; the next chunk's vector steps wait for it). Between passes, the
// merges' final values and the steps on row values; at the end, the row values that
// leave the kernel. GM windows are relative to the task's bindings (those of
// vector_bindings()), the chunk's offset along the streamed dim in the operand.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/passes/pipeline_ir.h"

namespace pto::passes {

class StreamEmitter {
 public:
  // `ext`: the task's tile extents (its rows); the streamed dim's entry is ignored.
  StreamEmitter(const VectorBody& body, const VecTiling& layout, const Shape& ext, int nbuffer, BlockProgram& block);

  void prologue();                    // row inputs and the steps on them alone
  void chunk(int pass, int64_t c);    // one chunk of one pass
  void after_pass(int pass);          // the merges' results and the steps on row values
  void epilogue();                    // the stores of row values
  void emit_all();

  // Chunks that emit the same instructions up to offsets, as (representative, how
  // many): every chunk that differs (the first, the last, those whose slot waits or
  // releases differ) alone, the rest as one class. analyze() counts through it.
  std::vector<std::pair<int64_t, int64_t>> chunk_classes(int pass) const;

 private:
  int scratch(const std::string& name) const;
  int64_t total_chunks() const;
  Shape chunk_ext(int64_t c) const;
  Shape chunk_offset(int64_t c) const;
  Operand row_operand(int buffer) const;
  Operand chunk_operand(int buffer, int64_t c) const;
  Operand value_operand(int pass, int value, int64_t c) const;
  int half(int home, int spare, int64_t c, int64_t chunks) const;
  void vec(Opcode op, OpKind vop, Operand dst, std::vector<Operand> src, std::optional<double> scalar = std::nullopt,
           int reduce_dim = -1);
  void row_step(int step);
  void fold(int step, int64_t c, int64_t chunks);
  void merge_softmax(const OnlineMerge& m, int64_t c, int64_t chunks);
  void merge_variance(const OnlineMerge& m, int64_t c, int64_t chunks);

  const VectorBody& body_;
  const VecTiling& layout_;
  const StreamPlan& plan_;
  Shape ext_;
  int nbuffer_;
  BlockProgram& block_;
  int current_pass_ = 0;
  std::vector<int> row_buffer_;                 // per value: its task-long buffer, -1
  std::vector<std::vector<int>> load_slots_;    // per value: its chunk-input slots
  std::vector<std::vector<int>> pass_buffer_;   // per pass, per value: its chunk buffer, -1
  std::vector<std::pair<std::string, int>> scratch_;  // name -> buffer id
};

// Buffers and instructions of one streamed task.
void emit_stream_block(const VectorBody& body, const VecTiling& layout, const Shape& ext, int nbuffer,
                       BlockProgram& block);

}  // namespace pto::passes
