// The CPU runtime: executes a PTO program with real data on this machine.
//
// Tasks run in parallel with OpenMP in an order that respects the execute graph
// (kernel barriers and task dependencies). Each thread owns scratch memory standing in
// for the local buffers (UB ~ L1d, L1 ~ L2); TMATMUL runs a register-blocked FMA
// micro-kernel on operands packed by TLOAD, vector instructions run vectorised loops.
// fp16/bf16 are stored as such in GM and computed in fp32.
#pragma once

#include <memory>
#include <vector>

#include "core/host_tensor.h"
#include "core/program.h"

namespace pto {

struct ExecOptions {
  int threads = 0;  // 0: all available (OpenMP default)
};

class CpuExecutor {
 public:
  explicit CpuExecutor(const Program& program, ExecOptions options = {});
  ~CpuExecutor();
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  // Runs the program on `inputs`, in graph-input order (shapes/dtypes checked, usage
  // Error on mismatch). Intermediates, outputs and scratch are allocated once and reused
  // by later runs, and the outputs stay where the program wrote them, as an NPU's stay
  // in GM: a timed execute() times the program alone. Copying an 8 MiB output out
  // took 40 % of a 2048x1024 rmsnorm's run.
  void execute(const std::vector<HostTensor>& inputs);

  // Copies out the last execute()'s outputs, in graph-output order. The inputs given to
  // it must still be alive (an output may be a view of one). Usage Error before a run
  // has completed, or after one threw.
  std::vector<HostTensor> outputs() const;

  // execute(), then outputs().
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pto
