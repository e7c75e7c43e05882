#include "measure/sim/costed_block.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "core/program_verify.h"

namespace pto::sim {
namespace {

constexpr double kVectorRepeatBytes = 256;  // one vector repeat (ascend-facts.md)

struct Context {
  const BlockProgram& block;
  const Target& target;
  std::map<int, const LocalBuffer*> buffers;

  const LocalBuffer& buffer(const Operand& o) const { return *buffers.at(o.id); }
  double bytes(const Operand& o) const {
    return static_cast<double>(num_elements(o.extent)) * dtype_size(buffer(o).dtype);
  }
};

// The target's vector model: latency + (repeats - 1) * cycles per repeat, where a
// repeat is 256 bytes and takes (elements per repeat / parallelism) cycles. The
// widest operand sets the repeat count and the dtype.
double vector_cycles(const Context& c, size_t index, const std::string& op) {
  const Instr& in = c.block.instrs[index];
  double bytes = 0;
  DType dtype = DType::F32;
  auto consider = [&](const Operand& o) {
    if (o.level == MemLevel::GM) return;  // CausalMask's position operand is never read
    const double b = c.bytes(o);
    if (b > bytes) bytes = b, dtype = c.buffer(o).dtype;
  };
  consider(in.dst);
  for (const Operand& s : in.src) consider(s);
  const VectorCost cost = c.target.vector_cost(op, dtype);
  const double repeats = std::max(1.0, std::ceil(bytes / kVectorRepeatBytes));
  const double per_repeat = kVectorRepeatBytes / dtype_size(dtype) / std::max(1, cost.parallelism);
  return cost.latency + (repeats - 1) * per_repeat;
}

double matmul_cycles(const Context& c, size_t index) {
  const Instr& in = c.block.instrs[index];
  const DType input = c.buffer(in.src[0]).dtype;
  auto it = c.target.fractal.find(input);
  const Fractal f = it == c.target.fractal.end() ? Fractal{} : it->second;
  const int64_t m = in.dst.extent[in.dst.extent.size() - 2];
  const int64_t n = in.dst.extent.back();
  const int64_t k = in.src[0].extent.back();
  // One fractal MAC per cycle; partial fractals cost a whole one.
  return static_cast<double>(ceil_div(m, f.m) * ceil_div(k, f.k) * ceil_div(n, f.n));
}

double move_cycles(const Context& c, size_t index) {
  const Instr& in = c.block.instrs[index];
  const MemLevel from = in.src[0].level, to = in.dst.level;
  const Target& t = c.target;
  const double bytes = c.bytes(in.src[0]);
  if (from == MemLevel::L1 && to == MemLevel::L0A) return t.l1_to_l0_latency + bytes / t.l1_to_l0a_bpc;
  if (from == MemLevel::L1 && to == MemLevel::L0B) return t.l1_to_l0_latency + bytes / t.l1_to_l0b_bpc;
  if (from == MemLevel::L1 && to == MemLevel::UB) return bytes / t.l1_to_ub_bpc;
  if (from == MemLevel::UB && to == MemLevel::L1) return bytes / t.ub_to_l1_bpc;
  if (from == MemLevel::L0C && to == MemLevel::UB) return t.l1_copy_latency + bytes / t.l0c_to_ub_bpc;
  return vector_cycles(c, index, "copy");  // UB -> UB, the one path left (verified)
}

PlannedStep plan_gm(const Context& c, size_t index, std::vector<Operand>& gm_operands) {
  const Instr& in = c.block.instrs[index];
  const Target& t = c.target;
  PlannedStep s;
  s.pipe = in.pipe;
  if (in.op == Opcode::TLOAD) {
    s.kind = StepKind::GmRead;
    s.gm_operand = static_cast<int>(gm_operands.size());
    gm_operands.push_back(in.src[0]);
    s.latency = t.gm_read_latency;
    s.hit_bytes_per_cycle = t.l2_read_bpc;
    s.miss_bytes_per_cycle = t.gm_read_bpc;
    return s;
  }
  s.kind = in.accumulate ? StepKind::GmAccumulate : StepKind::GmWrite;
  s.gm_operand = static_cast<int>(gm_operands.size());
  gm_operands.push_back(in.dst);
  s.latency = t.gm_write_latency;
  const double path = in.src[0].level == MemLevel::L0C ? t.l0c_to_ub_bpc : t.ub_to_gm_bpc;
  s.hit_bytes_per_cycle = std::min(path, t.l2_write_bpc);
  s.miss_bytes_per_cycle = t.gm_read_bpc;  // an atomic add first fetches missing lines
  return s;
}

// A hand-off through a cluster's workspace: a GM transfer that stays in L2 (its lines
// are not tracked, a few hundred KB per cluster in a 96-192 MiB L2), at the L2 rates.
PlannedStep plan_workspace(const Context& c, size_t index) {
  const Instr& in = c.block.instrs[index];
  const Target& t = c.target;
  PlannedStep s;
  s.kind = StepKind::Workspace;
  s.pipe = in.pipe;
  s.bytes = c.bytes(in.src[0]);
  const MemLevel from = in.src[0].level;
  if (from == MemLevel::WS) {
    s.latency = t.gm_read_latency;
    s.hit_bytes_per_cycle = t.l2_read_bpc;
  } else {
    s.latency = t.gm_write_latency;
    s.hit_bytes_per_cycle = std::min(from == MemLevel::L0C ? t.l0c_to_ub_bpc : t.ub_to_gm_bpc, t.l2_write_bpc);
  }
  return s;
}

PlannedStep plan_step(const Context& c, size_t index, std::vector<Operand>& gm_operands) {
  const Instr& in = c.block.instrs[index];
  PlannedStep s;
  s.pipe = in.pipe;
  switch (in.op) {
    case Opcode::TLOAD:
    case Opcode::TSTORE: return plan_gm(c, index, gm_operands);
    case Opcode::TMOV:
      if (in.src[0].level == MemLevel::WS || in.dst.level == MemLevel::WS) return plan_workspace(c, index);
      s.cycles = move_cycles(c, index);
      break;
    case Opcode::TMATMUL: s.cycles = matmul_cycles(c, index); break;
    case Opcode::TVEC:
    case Opcode::TREDUCE: s.cycles = vector_cycles(c, index, op_kind_name(in.vop)); break;
    case Opcode::TFILL: s.cycles = vector_cycles(c, index, "fill"); break;
    case Opcode::SET_FLAG: s.kind = StepKind::SetFlag; s.cycles = c.target.sync_latency; break;
    case Opcode::WAIT_FLAG:
      s.kind = StepKind::WaitFlag;
      s.cycles = c.target.sync_latency;
      if (in.flag_peer >= 0) s.latency = c.target.cross_core_sync_latency;  // set on another core
      break;
  }
  return s;
}

// The slot of a UB buffer named "<tensor>.ub[<slot>]"; -1 for any other buffer.
int slot_of(const LocalBuffer& b) {
  const size_t open = b.name.rfind('[');
  if (b.level != MemLevel::UB || open == std::string::npos || b.name.back() != ']') return -1;
  const std::string digits = b.name.substr(open + 1, b.name.size() - open - 2);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

// 1 + the highest slot index among the block's UB buffers.
int ub_slots(const BlockProgram& block) {
  int slots = 1;
  for (const LocalBuffer& b : block.buffers) slots = std::max(slots, slot_of(b) + 1);
  return slots;
}

// What a write to a UB buffer must wait for in an older task on the same core. A slotted
// load buffer with several slots belongs to the task `slots` runs back, and no other
// buffer shares its bytes (the allocator keeps it live all task long); any other buffer
// is the previous task's, and waits for every access there to a buffer sharing its bytes
// (liveness-based reuse puts several values at one offset).
std::vector<CostedBlock::Reuse> plan_reuse(const Context& c, int slots) {
  const std::vector<Instr>& instrs = c.block.instrs;
  std::vector<CostedBlock::Reuse> reuse(instrs.size());
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Operand& dst = instrs[i].dst;
    if (dst.level != MemLevel::UB) continue;
    const LocalBuffer& written = c.buffer(dst);
    const bool own_slot = slots > 1 && slot_of(written) >= 0;
    reuse[i].distance = own_slot ? slots : 1;
    auto touches = [&](const Operand& o) {
      if (o.level != MemLevel::UB) return false;
      const LocalBuffer& b = c.buffer(o);
      return own_slot ? b.id == written.id : b.shares_bytes(written);
    };
    // A pipe runs its steps in order, so its last access stands for all of them.
    std::array<int, kNumPipes> last{};
    last.fill(-1);
    for (size_t j = 0; j < instrs.size(); ++j) {
      const Instr& in = instrs[j];
      if (touches(in.dst) || std::any_of(in.src.begin(), in.src.end(), touches))
        last[static_cast<int>(in.pipe)] = static_cast<int>(j);
    }
    for (int j : last)
      if (j >= 0) reuse[i].after.push_back(j);
  }
  return reuse;
}

}  // namespace

CostedBlock cost_block(const BlockProgram& block, const Target& target) {
  Context c{block, target, {}};
  for (const LocalBuffer& b : block.buffers) c.buffers[b.id] = &b;
  CostedBlock plan;
  plan.block = block.id;
  plan.core = block.core;
  const bool overlaps_tasks = block.core == CoreType::AIV && !block.sequential_tasks;
  const int slots = ub_slots(block);
  plan.tasks_in_flight = overlaps_tasks ? slots + 1 : 1;
  plan.steps.reserve(block.instrs.size());
  for (size_t i = 0; i < block.instrs.size(); ++i) {
    const Instr& in = block.instrs[i];
    if (in.unit >= kMaxUnits) usage_error("simulator: block '" + block.name + "' runs on unit " + std::to_string(in.unit) +
                                          "; a cluster has at most " + std::to_string(kMaxUnits));
    PlannedStep step = plan_step(c, i, plan.gm_operands);
    step.lane = in.unit * kNumPipes + static_cast<int>(in.pipe);
    plan.units = std::max(plan.units, in.unit + 1);
    plan.pipe_steps[step.lane].push_back(static_cast<int>(i));
    plan.steps.push_back(step);
  }
  const std::vector<int> sets = matching_set_flags(block);
  for (size_t i = 0; i < sets.size(); ++i) plan.steps[i].matched_set = sets[i];
  if (overlaps_tasks) plan.reuse = plan_reuse(c, slots);
  plan.reuse.resize(plan.steps.size());
  return plan;
}

}  // namespace pto::sim
