// Runs one task: its decoded block's steps over a thread's scratch arena, with GM
// operands addressed through the task's bindings.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <vector>

#include "core/program.h"
#include "core/runtime/decoded_block.h"
#include "core/runtime/gm_space.h"

namespace pto::runtime {

// Where an L0A/L0B buffer's panels are: its own storage, or a view into L1.
struct PanelRef {
  const float* base = nullptr;
  int64_t panel_stride = 0;
};

// One thread's stand-in for a core's local memories, allocated once.
class Scratch {
 public:
  Scratch(int64_t arena_bytes, size_t max_buffers);
  char* arena() const { return arena_.get(); }
  std::vector<PanelRef>& l0() { return l0_; }

 private:
  struct Free {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, Free> arena_;
  std::vector<PanelRef> l0_;
};

class TaskRunner {
 public:
  // The program must be verified (core/program_verify.h). Internal Error naming the
  // task and instruction for a GM window outside its tensor.
  TaskRunner(const Program& program, const GmSpace& gm);

  void run(int task, Scratch& scratch) const;
  int64_t arena_bytes() const { return arena_bytes_; }
  size_t max_buffers() const { return max_buffers_; }

 private:
  void check_gm_windows(const Task& task) const;

  const Program& program_;
  const GmSpace& gm_;
  std::vector<DecodedBlock> plans_;  // per block
  int64_t arena_bytes_ = 0;
  size_t max_buffers_ = 0;
  // Split-K partial tiles add into GM under a lock picked by the window's address.
  mutable std::array<std::mutex, 64> store_locks_;
};

}  // namespace pto::runtime
