#include "measure/sim/trace.h"

#include <algorithm>

namespace pto::sim {
namespace {

const LocalBuffer* find_buffer(const BlockProgram& block, int id) {
  for (const LocalBuffer& b : block.buffers)
    if (b.id == id) return &b;
  return nullptr;
}

const GmTensor* find_tensor(const Program& program, const Task& task, int slot) {
  if (slot < 0 || slot >= static_cast<int>(task.bindings.size())) return nullptr;
  return &program.tensors[task.bindings[slot].tensor];
}

// "x.ub[0] [64,512]" for a local buffer, "GM x [64,512]" for a GM window.
std::string tile_name(const Program& program, const Task& task, const BlockProgram& block, const Operand& o) {
  std::string name = mem_level_name(o.level);
  if (o.level == MemLevel::GM) {
    if (const GmTensor* t = find_tensor(program, task, o.id)) name += " " + t->name;
  } else if (const LocalBuffer* b = find_buffer(block, o.id)) {
    name = b->name;
  }
  return name + " " + shape_str(o.extent);
}

double operand_bytes(const Program& program, const Task& task, const BlockProgram& block, const Operand& o) {
  DType dtype = DType::F32;
  if (o.level == MemLevel::GM) {
    if (const GmTensor* t = find_tensor(program, task, o.id)) dtype = t->dtype;
  } else if (const LocalBuffer* b = find_buffer(block, o.id)) {
    dtype = b->dtype;
  }
  return static_cast<double>(num_elements(o.extent)) * dtype_size(dtype);
}

bool is_flag(Opcode op) { return op == Opcode::SET_FLAG || op == Opcode::WAIT_FLAG; }

// The instruction's args: its tiles, the bytes it moves or computes on, its task.
nlohmann::json step_args(const Program& program, const TraceStep& s, double start, double end) {
  const Instr& in = s.block->instrs[s.step];
  const Task& task = program.tasks[s.task];
  nlohmann::json args = {{"task", s.task},
                         {"block", s.block->name},
                         {"tile_index", task.tile_index},
                         {"start_cycle", start},
                         {"end_cycle", end}};
  if (is_flag(in.op)) {
    args["flag"] = std::string(pipe_name(in.flag_src)) + " -> " + pipe_name(in.flag_dst) + " event " +
                   std::to_string(in.event);
    return args;
  }
  args["dst"] = tile_name(program, task, *s.block, in.dst);
  nlohmann::json src = nlohmann::json::array();
  for (const Operand& o : in.src) src.push_back(tile_name(program, task, *s.block, o));
  args["src"] = src;
  const Operand& moved = in.op == Opcode::TLOAD || in.op == Opcode::TMOV ? in.src.at(0) : in.dst;
  const double bytes = operand_bytes(program, task, *s.block, moved);
  args["bytes"] = bytes;
  if (s.l2_hit_bytes >= 0) {
    args["l2_hit_bytes"] = s.l2_hit_bytes;
    args["l2"] = s.l2_hit_bytes >= bytes ? "hit" : s.l2_hit_bytes <= 0 ? "miss" : "partial hit";
  }
  return args;
}

nlohmann::json metadata_event(const char* name, int pid, int tid, nlohmann::json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

}  // namespace

ChromeTrace::ChromeTrace(const Program& program, const Target& target, int64_t max_slices)
    : program_(program),
      clock_mhz_(target.clock_mhz > 0 ? target.clock_mhz : 1),
      target_(target.name),
      max_slices_(max_slices) {}

ChromeTrace::Track& ChromeTrace::track(const TraceStep& s) {
  const int pipe = static_cast<int>(s.block->instrs[s.step].pipe);
  auto [it, added] = tracks_.try_emplace({s.core, pipe});
  if (added) {
    if (!core_names_.count(s.core)) {
      core_names_[s.core] = std::string(core_type_name(s.core_type)) + " " + std::to_string(s.core_in_pool);
      add(metadata_event("process_name", s.core, 0, {{"name", core_names_[s.core]}}));
      add(metadata_event("process_sort_index", s.core, 0, {{"sort_index", s.core}}));
    }
    it->second.name = pipe_name(static_cast<Pipe>(pipe));
    add(metadata_event("thread_name", s.core, pipe, {{"name", it->second.name}}));
    add(metadata_event("thread_sort_index", s.core, pipe, {{"sort_index", pipe}}));
  }
  return it->second;
}

// Clips the slice to start where its track's last one ended (a pipelined transfer's
// latency hides behind the one before it), the same union the simulator's busy time
// counts; a transfer wholly inside the previous one adds nothing and gets no slice.
void ChromeTrace::on_step(const TraceStep& s) {
  Track& t = track(s);
  const double start = std::max(s.start, std::min(t.last_end, s.end));
  t.last_end = std::max(t.last_end, s.end);
  if (s.end <= start) return;
  const Instr& in = s.block->instrs[s.step];
  const int pipe = static_cast<int>(in.pipe);
  if (max_slices_ > 0 && slices_ >= max_slices_) {
    ++dropped_;
    return;
  }
  ++slices_;
  const double ts = to_us(start);
  add({{"ph", "X"},
                     {"name", in.mnemonic()},
                     {"cat", opcode_name(in.op)},
                     {"pid", s.core},
                     {"tid", pipe},
                     {"ts", ts},
                     {"dur", to_us(s.end) - ts},
                     {"args", step_args(program_, s, start, s.end)}});
  if (in.op == Opcode::SET_FLAG) sets_[{s.task, s.step}] = {s.core, pipe, ts};
  if (in.op != Opcode::WAIT_FLAG) return;
  const auto set = sets_.find({s.task, s.flag_set_step});
  if (set == sets_.end()) return;  // its SET_FLAG was capped away or had no slice
  const int64_t id = flows_++;
  const auto& [set_core, set_pipe, set_ts] = set->second;  // another core's, between a MIX task's units
  add({{"ph", "s"}, {"name", "flag"}, {"cat", "flag"}, {"id", id}, {"pid", set_core},
                     {"tid", set_pipe}, {"ts", set_ts}});
  add({{"ph", "f"}, {"bp", "e"}, {"name", "flag"}, {"cat", "flag"}, {"id", id},
                     {"pid", s.core}, {"tid", pipe}, {"ts", ts}});
  sets_.erase(set);
}

void ChromeTrace::add(const nlohmann::json& event) {
  if (!events_.empty()) events_ += ',';
  events_ += event.dump();
}

std::string ChromeTrace::text() const {
  nlohmann::json meta = {{"label", "simulated"},
                         {"target", target_},
                         {"clock_mhz", clock_mhz_},
                         {"time_unit", "us at the target clock"},
                         {"slices", slices_},
                         {"capped", capped()},
                         {"dropped_slices", dropped_},
                         {"max_slices", max_slices_}};
  if (capped())
    meta["note"] = "capped: only the first " + std::to_string(max_slices_) +
                   " slices in issue order are kept; run with --trace-full for all of them";
  std::string out;
  out.reserve(events_.size() + 512);
  out += "{\"traceEvents\":[";
  out += events_;
  out += "],\"displayTimeUnit\":\"ns\",\"metadata\":" + meta.dump() + "}\n";
  return out;
}

void ChromeTrace::write(std::ostream& out) const { out << text(); }

}  // namespace pto::sim
