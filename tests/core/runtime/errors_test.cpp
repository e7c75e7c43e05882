// The runtime's own error paths: inputs against the program, outputs before a run, GM windows against
// their tensors (the runtime resolves views), and a task failure that stops the run.
// Malformed programs: tests/measure/program_verify_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/runtime/decoded_block.h"
#include "core/runtime/convert.h"
#include "core/runtime/microkernel.h"
#include "core/runtime/panels.h"
#include "core/runtime/scheduler.h"
#include "core/runtime/strided.h"
#include "core/runtime/vec_math.h"
#include "tests/core/error_testing.h"
#include "tests/core/graph_eval.h"
#include "tests/core/runtime/runtime_programs.h"

namespace pto {
namespace {

using namespace testing;

TEST(RuntimeErrors, InputsAreCheckedAgainstTheProgram) {
  const Program p = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  CpuExecutor exec(p);
  expect_error([&] { exec.run({}); }, ErrorCategory::Usage, {"expected 1 inputs, got 0"});
  expect_error([&] { exec.run({HostTensor({3, 2}, DType::F32)}); }, ErrorCategory::Usage, {"input 0", "[3,2]", "[2,3]"});
  expect_error([&] { exec.run({HostTensor({2, 3}, DType::F16)}); }, ErrorCategory::Usage, {"input 0", "fp16", "fp32"});
}

TEST(RuntimeErrors, OutputsBeforeAnyRunAreAUsageErrorNotZeros) {
  const Program p = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  CpuExecutor exec(p);
  expect_error([&] { (void)exec.outputs(); }, ErrorCategory::Usage, {"has not run", "execute()"});
  exec.execute({HostTensor({2, 3}, DType::F32)});
  EXPECT_EQ(exec.outputs().size(), 1u);
  // A run that throws leaves nothing to read, not the outputs of the run before it.
  expect_error([&] { exec.execute({}); }, ErrorCategory::Usage, {"expected 1 inputs"});
  expect_error([&] { (void)exec.outputs(); }, ErrorCategory::Usage, {"has not run"});
}

TEST(RuntimeErrors, AGmWindowPastItsTensorFailsAtConstructionNamingTheTask) {
  Program p = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  p.tasks[0].bindings[0].origin = {1, 0};
  expect_error([&] { CpuExecutor e(p); }, ErrorCategory::Internal, {"task 0", "TLOAD", "leaves tensor"});
}

TEST(RuntimeErrors, ATaskFailureStopsTheRunAndPropagates) {
  const Program p = unary_or_binary_program(OpKind::Exp, {2, 3}, DType::F32, std::nullopt, false, {2, 3});
  Program bad = p;
  bad.blocks[0].instrs[1].vop = OpKind::Matmul;  // not a vector op: fails when executed
  CpuExecutor exec(bad, ExecOptions{2});
  expect_error([&] { exec.run({HostTensor({2, 3}, DType::F32)}); }, ErrorCategory::Internal, {"matmul"});
}

}  // namespace
}  // namespace pto
