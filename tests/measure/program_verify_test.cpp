// The program verifier and its two consumers: a malformed program is rejected by
// verify_program, by the CPU runtime and by the simulator with one category
// (Internal) and one message, for hand-picked defects and for random corruptions of
// well-formed programs; well-formed programs pass all three.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_runtime.h"
#include "core/error.h"
#include "core/program_verify.h"
#include "measure/sim/simulator.h"
#include "tests/measure/sim_programs.h"
#include "tests/program_builder.h"

namespace pto {
namespace {

using testing::gm;
using testing::local;

// x[rows, 64] fp32 -> exp -> y, one task per row tile, with the flags codegen emits.
Program vector_program(int tiles, int64_t rows) {
  testing::ProgramBuilder pb;
  const int x = pb.tensor("x", {tiles * rows, 64}, DType::F32, TensorRole::Input, 0);
  const int y = pb.tensor("y", {tiles * rows, 64}, DType::F32, TensorRole::Output, 0);
  const int k = pb.kernel("exp");
  pb.block("exp");
  const int in = pb.buffer("x.ub", MemLevel::UB, DType::F32, {rows, 64});
  const int out = pb.buffer("y.ub", MemLevel::UB, DType::F32, {rows, 64});
  pb.emit(Opcode::TLOAD, local(MemLevel::UB, in, {rows, 64}), {gm(0, {0, 0}, {rows, 64})});
  pb.flags(Pipe::MTE2, Pipe::V);
  pb.vec(OpKind::Exp, local(MemLevel::UB, out, {rows, 64}), {local(MemLevel::UB, in, {rows, 64})});
  pb.flags(Pipe::V, Pipe::MTE3);
  pb.emit(Opcode::TSTORE, gm(1, {0, 0}, {rows, 64}), {local(MemLevel::UB, out, {rows, 64})});
  for (int t = 0; t < tiles; ++t) pb.task(k, {{x, {t * rows, 0}}, {y, {t * rows, 0}}});
  pb.p.target = "ascend910b1";
  return pb.p;
}

Program matmul_program() {
  sim::testing::MatmulSpec s;
  s.M = 96, s.N = 80, s.K = 128, s.mL1 = 64, s.nL1 = 64, s.kL1 = 64, s.kL0 = 32;
  s.dtype = DType::F32;
  Program p = sim::testing::tiled_matmul(s);
  for (int t : {0, 1, 2}) p.tensors[t].io_index = t < 2 ? t : 0;  // a, b in; c out: the runtime binds them
  return p;
}

// The error `f` throws, or nullopt.
std::optional<Error> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

std::optional<Error> verifier_error(const Program& p) { return error_of([&] { verify_program(p); }); }
std::optional<Error> runtime_error(const Program& p) { return error_of([&] { CpuExecutor e(p); }); }
std::optional<Error> simulator_error(const Program& p) {
  return error_of([&] { sim::simulate(p, sim::testing::b1()); });
}

// The verifier rejects `p` as malformed, and both consumers throw exactly its error.
void expect_rejected_alike(const Program& p, const std::vector<std::string>& fragments, const std::string& context) {
  SCOPED_TRACE(context);
  const std::optional<Error> v = verifier_error(p);
  ASSERT_TRUE(v) << "the verifier accepted it";
  EXPECT_EQ(v->category(), ErrorCategory::Internal);
  const std::string message = v->what();
  EXPECT_EQ(message.rfind("malformed program: ", 0), 0u) << message;
  for (const std::string& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << message << " lacks " << f;
  for (const auto& [who, e] : {std::pair{"runtime", runtime_error(p)}, std::pair{"simulator", simulator_error(p)}}) {
    ASSERT_TRUE(e) << who << " accepted it";
    EXPECT_EQ(e->category(), ErrorCategory::Internal) << who;
    EXPECT_EQ(std::string(e->what()), message) << who;
  }
}

int first(const BlockProgram& b, Opcode op) {
  for (size_t i = 0; i < b.instrs.size(); ++i)
    if (b.instrs[i].op == op) return static_cast<int>(i);
  ADD_FAILURE() << "no " << opcode_name(op);
  return 0;
}

TEST(ProgramVerify, WellFormedProgramsPassTheVerifierAndBothConsumers) {
  for (const Program& p : {vector_program(3, 8), matmul_program()}) {
    for (const auto& [who, e] : {std::pair{"verifier", verifier_error(p)}, std::pair{"runtime", runtime_error(p)},
                                 std::pair{"simulator", simulator_error(p)}})
      EXPECT_FALSE(e) << who << ": " << e->what();
  }
}

TEST(ProgramVerify, EachDefectIsRejectedByBothConsumersWithTheVerifiersMessage) {
  const Program vec = vector_program(3, 8), mm = matmul_program();
  const int tvec = first(vec.blocks[0], Opcode::TVEC), tload = first(vec.blocks[0], Opcode::TLOAD);
  const int tstore = first(vec.blocks[0], Opcode::TSTORE);
  struct Case {
    std::string name;
    const Program& base;
    std::function<void(Program&)> corrupt;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"unknown buffer", vec, [&](Program& p) { p.blocks[0].instrs[tvec].dst.id = 77; }, {"instr 3", "no buffer with id 77"}},
      {"window outside its buffer", vec, [&](Program& p) { p.blocks[0].instrs[tload].dst.extent = {8, 65}; },
       {"TLOAD", "leaves buffer 'x.ub'"}},
      {"operand level", vec, [&](Program& p) { p.blocks[0].instrs[tvec].src[0].level = MemLevel::L1; }, {"cannot be at L1"}},
      {"TSTORE into a local buffer", vec, [&](Program& p) { p.blocks[0].instrs[tstore].dst.level = MemLevel::UB; },
       {"TSTORE", "destination must be GM"}},
      {"missing source", vec, [&](Program& p) { p.blocks[0].instrs[tvec].src.clear(); }, {"has 0 sources, needs 1"}},
      {"wait without its set", vec, [&](Program& p) { p.blocks[0].instrs[tload + 2].event = 5; },
       {"WAIT_FLAG MTE2 -> V event 5", "no matching SET_FLAG"}},
      {"missing binding slot", vec, [&](Program& p) { p.tasks[1].bindings.pop_back(); }, {"task 1", "binding slot 1"}},
      {"unknown tensor", vec, [&](Program& p) { p.tasks[0].bindings[0].tensor = 5; }, {"task 0 binds unknown tensor 5"}},
      {"unknown block", vec, [&](Program& p) { p.tasks[1].block = 7; }, {"task 1 runs unknown block 7"}},
      {"unknown dependency", vec, [&](Program& p) { p.tasks[0].deps = {9}; }, {"task 0 depends on task 9"}},
      {"unlisted task", vec, [&](Program& p) { p.kernels[0].tasks = {0, 1}; }, {"task 2 belongs to no kernel"}},
      {"task listed twice", vec, [&](Program& p) { p.kernels[0].tasks.push_back(0); }, {"listed by two kernels"}},
      {"dependency cycle", vec, [&](Program& p) { p.tasks[0].deps = {1}, p.tasks[1].deps = {0}; }, {"cycle"}},
      {"alias cycle", vec, [&](Program& p) { p.tensors[0].alias_of = 1, p.tensors[1].alias_of = 0; }, {"cycle"}},
      {"block id", vec, [&](Program& p) { p.blocks[0].id = 4; }, {"block 'exp' has id 4 at index 0"}},
      {"matmul extents", mm,
       [&](Program& p) { p.blocks[0].instrs[first(p.blocks[0], Opcode::TMATMUL)].src[1].extent = {16, 8}; },
       {"TMATMUL", "do not form a matmul"}},
      {"no data path", mm, [&](Program& p) {
         Instr& mov = p.blocks[0].instrs[first(p.blocks[0], Opcode::TMOV)];
         mov.dst.level = MemLevel::L0C;
       }, {"TMOV", "no data path L1 -> L0C"}},
      {"A into B", mm, [&](Program& p) {
         BlockProgram& b = p.blocks[0];
         for (LocalBuffer& buf : b.buffers)
           if (buf.level == MemLevel::L1) buf.layout = Layout::FractalA;
       }, {"mixes the Cube's A and B operands"}},
  };
  for (const Case& c : cases) {
    Program p = c.base;
    c.corrupt(p);
    expect_rejected_alike(p, c.fragments, c.name);
  }
}

// Random corruptions of one field: whenever the verifier rejects the result, both
// consumers reject it with the verifier's error.
TEST(ProgramVerify, RandomCorruptionsTheVerifierRejectsAreRejectedAlike) {
  std::mt19937 rng(14);
  const std::vector<Program> bases = {vector_program(2, 8), matmul_program()};
  int rejected = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Program p = bases[trial % bases.size()];
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    BlockProgram& b = p.blocks[pick(p.blocks.size())];
    Instr& in = b.instrs[pick(b.instrs.size())];
    Operand& o = in.src.empty() || pick(2) ? in.dst : in.src[pick(in.src.size())];
    switch (pick(5)) {
      case 0: o.id += static_cast<int>(pick(3)) - 1; break;
      case 1: o.level = static_cast<MemLevel>(pick(6)); break;
      case 2: if (!o.extent.empty()) o.extent[pick(o.extent.size())] += static_cast<int64_t>(pick(5)) - 2; break;
      case 3: if (!o.offset.empty()) o.offset[pick(o.offset.size())] += static_cast<int64_t>(pick(5)) - 2; break;
      case 4: in.event += static_cast<int>(pick(3)) - 1; break;
    }
    if (!verifier_error(p)) continue;
    ++rejected;
    expect_rejected_alike(p, {}, "trial " + std::to_string(trial));
  }
  EXPECT_GT(rejected, 50);
}

}  // namespace
}  // namespace pto
