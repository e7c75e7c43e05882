// The PTO program's names, buffer sizes, footprints, instruction count and its two
// text dumps (--emit program: instructions per block; --emit exec: kernels and tasks).
//
// A dump line of an instruction reads like the hardware listing a PyPTO user knows:
//   "  12  MTE2  TLOAD         a.l1[1] <- a[+0,+256] 128x256  transpose"
// GM operands carry the name of the tensor the block's tasks bind to that slot, so the
// graph's names survive down to the instructions.
#include "core/program.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/passes/cube_layout.h"

namespace pto {

const char* mem_level_name(MemLevel l) {
  switch (l) {
    case MemLevel::GM: return "GM";
    case MemLevel::L1: return "L1";
    case MemLevel::L0A: return "L0A";
    case MemLevel::L0B: return "L0B";
    case MemLevel::L0C: return "L0C";
    case MemLevel::UB: return "UB";
    case MemLevel::WS: return "WS";
  }
  return "?";
}

const char* pipe_name(Pipe p) {
  switch (p) {
    case Pipe::S: return "S";
    case Pipe::MTE1: return "MTE1";
    case Pipe::MTE2: return "MTE2";
    case Pipe::MTE3: return "MTE3";
    case Pipe::M: return "M";
    case Pipe::V: return "V";
    case Pipe::FIX: return "FIX";
  }
  return "?";
}

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::TLOAD: return "TLOAD";
    case Opcode::TMOV: return "TMOV";
    case Opcode::TMATMUL: return "TMATMUL";
    case Opcode::TVEC: return "TVEC";
    case Opcode::TREDUCE: return "TREDUCE";
    case Opcode::TFILL: return "TFILL";
    case Opcode::TSTORE: return "TSTORE";
    case Opcode::SET_FLAG: return "SET_FLAG";
    case Opcode::WAIT_FLAG: return "WAIT_FLAG";
  }
  return "?";
}

namespace {

std::string upper(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string join_extent(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s[i]);
  }
  return out;
}

std::string offset_suffix(const Shape& offset, bool always) {
  const bool any = std::any_of(offset.begin(), offset.end(), [](int64_t v) { return v != 0; });
  if (!any && !always) return "";
  std::string out = "[";
  for (size_t i = 0; i < offset.size(); ++i) {
    out += i ? ",+" : "+";
    out += std::to_string(offset[i]);
  }
  return out + "]";
}

// Names the block's GM slots after the tensors its first task binds to them.
struct OperandNamer {
  const Program& program;
  const BlockProgram& block;
  const Task* task;

  std::string name(const Operand& o) const {
    if (o.level != MemLevel::GM) {
      for (const LocalBuffer& b : block.buffers)
        if (b.id == o.id) return b.name + offset_suffix(o.offset, false);
      return "buf" + std::to_string(o.id) + offset_suffix(o.offset, false);
    }
    std::string tensor = "gm" + std::to_string(o.id);
    if (task && o.id >= 0 && o.id < static_cast<int>(task->bindings.size())) {
      const int t = task->bindings[o.id].tensor;
      if (t >= 0 && t < static_cast<int>(program.tensors.size())) tensor = program.tensors[t].name;
    }
    return tensor + offset_suffix(o.offset, true);
  }
};

std::string listing_scalar(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string instr_text(const Instr& in, const OperandNamer& namer) {
  std::string line = in.mnemonic();
  line.resize(std::max<size_t>(line.size(), 13), ' ');
  if (in.op == Opcode::SET_FLAG || in.op == Opcode::WAIT_FLAG) {
    const bool across = in.set_unit() != in.wait_unit();
    const std::string src = across ? "u" + std::to_string(in.set_unit()) + "." : "";
    const std::string dst = across ? "u" + std::to_string(in.wait_unit()) + "." : "";
    return line + " " + src + pipe_name(in.flag_src) + " -> " + dst + pipe_name(in.flag_dst) + "  ev" +
           std::to_string(in.event);
  }
  line += ' ';
  line += namer.name(in.dst);
  line += " <-";
  std::vector<std::string> args;
  for (const Operand& s : in.src) args.push_back(namer.name(s));
  if (in.scalar) {
    const std::string s = listing_scalar(*in.scalar);
    args.insert(in.scalar_first ? args.begin() : args.end(), s);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    line += i ? ", " : " ";
    line += args[i];
  }
  line += "  " + join_extent(in.dst.extent);
  if (in.op == Opcode::TREDUCE) line += "  dim " + std::to_string(in.reduce_dim);
  if (in.transpose) line += "  transpose";
  if (in.accumulate) line += "  accumulate";
  return line;
}

std::string list_ints(const std::vector<int>& v, size_t keep) {
  if (v.empty()) return "-";
  std::string out;
  for (size_t i = 0; i < std::min(v.size(), keep); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  if (v.size() > keep) out += ",... (" + std::to_string(v.size()) + " in all)";
  return out;
}

}  // namespace

std::string Instr::mnemonic() const {
  switch (op) {
    case Opcode::TVEC: return std::string(1, 'T').append(upper(op_kind_name(vop))).append(scalar ? "S" : "");
    case Opcode::TREDUCE: return std::string("TREDUCE_").append(upper(op_kind_name(vop)));
    default: return opcode_name(op);
  }
}

int64_t union_bytes(std::vector<std::pair<int64_t, int64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  int64_t total = 0, covered_to = 0;
  for (const auto& [begin, end] : ranges) {
    total += std::max<int64_t>(0, end - std::max(begin, covered_to));
    covered_to = std::max(covered_to, end);
  }
  return total;
}

bool LocalBuffer::shares_bytes(const LocalBuffer& other) const {
  return level == other.level && unit == other.unit &&
         byte_ranges_overlap(byte_offset, bytes(), other.byte_offset, other.bytes());
}

int64_t LocalBuffer::bytes() const {
  const bool cube_format = layout != Layout::RowMajor || level == MemLevel::L0C;
  if (cube_format && shape.size() >= 2) {
    const int64_t outer = num_elements(Shape(shape.begin(), shape.end() - 2));
    return outer * passes::cube_buffer_bytes(shape[shape.size() - 2], shape.back(), dtype);
  }
  return num_elements(shape) * dtype_size(dtype);
}

std::map<MemLevel, int64_t> BlockProgram::footprint() const {
  std::map<MemLevel, int64_t> out;
  for (const LocalBuffer& b : buffers) {
    int64_t& peak = out[b.level];
    peak = std::max(peak, b.byte_offset + b.bytes());
  }
  return out;
}

int64_t Program::instruction_count() const {
  int64_t n = 0;
  for (const Task& t : tasks) n += static_cast<int64_t>(blocks[t.block].instrs.size());
  return n;
}

std::string Program::dump_blocks() const {
  std::vector<int> users(blocks.size(), 0);
  std::vector<const Task*> first(blocks.size(), nullptr);
  for (const Task& t : tasks) {
    if (!first[t.block]) first[t.block] = &t;
    ++users[t.block];
  }
  std::string out;
  for (const BlockProgram& b : blocks) {
    out += "block " + std::to_string(b.id) + " \"" + b.name + "\" " + core_type_name(b.core) + "  (" +
           std::to_string(users[b.id]) + " tasks, " + std::to_string(b.instrs.size()) + " instructions)\n";
    const OperandNamer namer{*this, b, first[b.id]};
    const bool units = b.core == CoreType::MIX;
    char idx[48];
    for (size_t i = 0; i < b.instrs.size(); ++i) {
      const Instr& in = b.instrs[i];
      if (units) {
        std::snprintf(idx, sizeof idx, "%4zu  u%d %-5s ", i, in.unit, pipe_name(in.pipe));
      } else {
        std::snprintf(idx, sizeof idx, "%4zu  %-5s ", i, pipe_name(in.pipe));
      }
      out += idx + instr_text(in, namer) + "\n";
    }
  }
  return out;
}

std::string Program::dump_exec() const {
  constexpr size_t kShownTasks = 12, kShownDeps = 6;
  std::string out;
  for (const Kernel& k : kernels) {
    const bool mix = !k.tasks.empty() && tasks[k.tasks.front()].core == CoreType::MIX;
    out += "kernel " + std::to_string(k.id) + " \"" + k.name + "\" " + (mix ? "mix" : k.uses_cube ? "cube" : "vector") +
           "  after: " + list_ints(k.after, kShownDeps) + "  tasks: " + std::to_string(k.tasks.size()) + "\n";
    for (size_t i = 0; i < k.tasks.size(); ++i) {
      if (i == kShownTasks && k.tasks.size() > kShownTasks + 2) {
        out += "  ... " + std::to_string(k.tasks.size() - kShownTasks - 2) + " more tasks\n";
        i = k.tasks.size() - 2;
      }
      const Task& t = tasks[k.tasks[i]];
      out += "  task " + std::to_string(t.id) + "  " + core_type_name(t.core) + "  block " +
             std::to_string(t.block) + " \"" + blocks[t.block].name + "\"  tile " + shape_str(t.tile_index) +
             "  deps: " + list_ints(t.deps, kShownDeps) + "\n";
    }
  }
  return out;
}

}  // namespace pto
