// The checks of core/program_verify.h, in the order its head comment lists them.
#include "core/program_verify.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "core/error.h"

namespace pto {
namespace {

[[noreturn]] void malformed(const std::string& what) { internal_error("malformed program: " + what); }

std::string n(int64_t v) { return std::to_string(v); }

bool in_range(int index, size_t size) { return index >= 0 && static_cast<size_t>(index) < size; }

// ---- block programs ----------------------------------------------------------------------

class BlockVerifier {
 public:
  explicit BlockVerifier(const BlockProgram& block) : block_(block) {}

  void run() {
    for (const LocalBuffer& b : block_.buffers) add_buffer(b);
    for (int i = 0; i < static_cast<int>(block_.instrs.size()); ++i) {
      check_unit(i);
      check_instr(i);
    }
    check_flags();
  }

 private:
  [[noreturn]] void fail(int instr, const std::string& what) const {
    malformed("block '" + block_.name + "' instr " + n(instr) + " (" + opcode_name(block_.instrs[instr].op) + "): " + what);
  }

  void add_buffer(const LocalBuffer& b) {
    const std::string name = "block '" + block_.name + "' buffer '" + b.name + "'";
    if (!buffers_.emplace(b.id, &b).second) malformed("block '" + block_.name + "' has two buffers with id " + n(b.id));
    const bool fractal_ok = b.layout == Layout::RowMajor || b.level == MemLevel::L1 ||
                            (b.layout == Layout::FractalA && b.level == MemLevel::L0A) ||
                            (b.layout == Layout::FractalB && b.level == MemLevel::L0B);
    if (!fractal_ok) malformed(name + " at " + mem_level_name(b.level) + " cannot hold a Fractal layout");
  }

  static bool same_rank(const Operand& o) { return o.offset.empty() || o.offset.size() == o.extent.size(); }

  // Units: only a MIX block has more than one. Unit 0 is its Cube core (Cube pipes and
  // memories), units 1.. its Vector cores (UB, V, MTE3); an instruction names the
  // buffers of its own unit, except the cluster's workspace and the destination of a
  // direct hand-off (FIX L0C -> a Vector unit's UB, MTE3 UB -> the Cube's L1).
  void check_unit(int i) const {
    const Instr& in = block_.instrs[i];
    const bool mix = block_.core == CoreType::MIX;
    if (in.unit < 0 || (!mix && in.unit != 0)) fail(i, "runs on unit " + n(in.unit) + " of a " + core_type_name(block_.core) + " block");
    if (in.flag_peer < -1 || (!mix && in.flag_peer > 0)) fail(i, "flag peer unit " + n(in.flag_peer));
    auto check = [&](const Operand& o, bool may_cross) {
      if (o.level == MemLevel::GM || o.level == MemLevel::WS) return;
      auto it = buffers_.find(o.id);
      if (it == buffers_.end() || it->second->unit == in.unit || may_cross) return;
      fail(i, "unit " + n(in.unit) + " names buffer '" + it->second->name + "' of unit " + n(it->second->unit));
    };
    if (in.op == Opcode::SET_FLAG || in.op == Opcode::WAIT_FLAG) return;
    check(in.dst, in.op == Opcode::TMOV);
    for (const Operand& s : in.src) check(s, false);
  }

  void check_gm(int instr, const Operand& o, const char* role) const {
    if (o.level != MemLevel::GM) fail(instr, std::string(role) + " must be GM, is " + mem_level_name(o.level));
    if (o.id < 0) fail(instr, std::string(role) + " names binding slot " + n(o.id));
    if (!same_rank(o)) fail(instr, std::string(role) + " offset " + shape_str(o.offset) + " and extent " + shape_str(o.extent) + " differ in rank");
  }

  // A local operand at one of `levels`: its buffer exists at that level and holds the window.
  void check_local(int instr, const Operand& o, const char* role, std::initializer_list<MemLevel> levels) const {
    bool level_ok = false;
    for (MemLevel l : levels) level_ok = level_ok || o.level == l;
    if (!level_ok) fail(instr, std::string(role) + " cannot be at " + mem_level_name(o.level));
    auto it = buffers_.find(o.id);
    if (it == buffers_.end()) fail(instr, std::string(role) + " names no buffer with id " + n(o.id));
    const LocalBuffer& b = *it->second;
    if (b.level != o.level)
      fail(instr, std::string(role) + ": buffer '" + b.name + "' is " + mem_level_name(b.level) + ", operand says " + mem_level_name(o.level));
    if (!same_rank(o)) fail(instr, std::string(role) + " offset " + shape_str(o.offset) + " and extent " + shape_str(o.extent) + " differ in rank");
    // Operand dim od lines up with buffer dim od - extra, counted from the right.
    const int q = static_cast<int>(o.extent.size()), extra = q - static_cast<int>(b.shape.size());
    for (int od = 0; od < q; ++od) {
      const int64_t off = o.offset.empty() ? 0 : o.offset[od], ext = o.extent[od];
      const int64_t cap = od >= extra ? b.shape[od - extra] : 1;
      if (off < 0 || ext < 0 || off + ext > cap)
        fail(instr, std::string(role) + " window at " + shape_str(o.offset) + " of " + shape_str(o.extent) + " leaves buffer '" +
                        b.name + "' " + shape_str(b.shape));
    }
  }

  void sources(int instr, size_t count) const {
    if (block_.instrs[instr].src.size() != count)
      fail(instr, "has " + n(static_cast<int64_t>(block_.instrs[instr].src.size())) + " sources, needs " + n(static_cast<int64_t>(count)));
  }

  void check_instr(int i) {
    const Instr& in = block_.instrs[i];
    using L = MemLevel;
    switch (in.op) {
      case Opcode::SET_FLAG:
      case Opcode::WAIT_FLAG: return;
      case Opcode::TLOAD:
        sources(i, 1);
        check_gm(i, in.src[0], "source");
        return check_local(i, in.dst, "destination", {L::L1, L::UB});
      case Opcode::TSTORE:
        sources(i, 1);
        check_gm(i, in.dst, "destination");
        return check_local(i, in.src[0], "source", {L::UB, L::L0C});
      case Opcode::TMOV: return check_move(i, in);
      case Opcode::TMATMUL: return check_matmul(i, in);
      case Opcode::TFILL:
        sources(i, 0);
        if (!in.scalar) fail(i, "has no value");
        return check_local(i, in.dst, "destination", {L::UB});
      case Opcode::TREDUCE: return check_reduce(i, in);
      case Opcode::TVEC:
        if (is_reduction(in.vop)) return check_reduce(i, in);
        return check_vector(i, in);
    }
    fail(i, "unknown opcode");
  }

  void check_move(int i, const Instr& in) const {
    sources(i, 1);
    using L = MemLevel;
    const L from = in.src[0].level, to = in.dst.level;
    const bool path = (from == L::L1 && (to == L::L0A || to == L::L0B || to == L::UB)) ||
                      (from == L::UB && (to == L::L1 || to == L::UB || to == L::WS)) ||
                      (from == L::L0C && (to == L::UB || to == L::WS)) ||
                      (from == L::WS && (to == L::UB || to == L::L1));
    if (!path) fail(i, std::string("no data path ") + mem_level_name(from) + " -> " + mem_level_name(to));
    check_local(i, in.src[0], "source", {from});
    check_local(i, in.dst, "destination", {to});
    const LocalBuffer &src = *buffers_.at(in.src[0].id), &dst = *buffers_.at(in.dst.id);
    const char *a = cube_role(src), *b = cube_role(dst);
    if (a && b && std::string_view(a) != b) fail(i, "moving '" + src.name + "' into '" + dst.name + "' mixes the Cube's " + a + " and " + b + " operands");
  }

  // "A" or "B" for a buffer that holds a Cube operand, nullptr for others.
  static const char* cube_role(const LocalBuffer& b) {
    if (b.level == MemLevel::L0A || b.layout == Layout::FractalA) return "A";
    if (b.level == MemLevel::L0B || b.layout == Layout::FractalB) return "B";
    return nullptr;
  }

  void check_matmul(int i, const Instr& in) const {
    sources(i, 2);
    check_local(i, in.dst, "destination", {MemLevel::L0C});
    check_local(i, in.src[0], "source 0", {MemLevel::L0A});
    check_local(i, in.src[1], "source 1", {MemLevel::L0B});
    const Shape &c = in.dst.extent, &a = in.src[0].extent, &b = in.src[1].extent;
    auto back = [](const Shape& s, size_t k) { return s[s.size() - 1 - k]; };
    const bool forms = c.size() >= 2 && a.size() >= 2 && b.size() >= 2 && back(a, 0) == back(b, 1) &&
                       back(c, 1) == back(a, 1) && back(c, 0) == back(b, 0);
    if (!forms)
      fail(i, "extents " + shape_str(c) + " <- " + shape_str(a) + " x " + shape_str(b) + " do not form a matmul [m,n] <- [m,k] x [k,n]");
  }

  void check_reduce(int i, const Instr& in) const {
    sources(i, 1);
    check_local(i, in.dst, "destination", {MemLevel::UB});
    check_local(i, in.src[0], "source", {MemLevel::UB});
    const int rank = static_cast<int>(in.src[0].extent.size());
    if (in.reduce_dim < 0 || in.reduce_dim >= rank)
      fail(i, "reduce dim " + n(in.reduce_dim) + " outside the rank-" + n(rank) + " source window");
  }

  void check_vector(int i, const Instr& in) const {
    check_local(i, in.dst, "destination", {MemLevel::UB});
    if (in.vop == OpKind::CausalMask) {
      sources(i, 2);
      check_local(i, in.src[0], "source 0", {MemLevel::UB});
      check_gm(i, in.src[1], "source 1 (the mask position)");
      if (in.dst.extent.size() < 2) fail(i, "causal mask of the rank-1 window " + shape_str(in.dst.extent));
      return;
    }
    const size_t count = is_binary(in.vop) && !in.scalar ? 2 : 1;
    sources(i, count);
    for (size_t s = 0; s < count; ++s) check_local(i, in.src[s], s ? "source 1" : "source 0", {MemLevel::UB});
  }

  void check_flags() const {
    const std::vector<int> sets = matching_set_flags(block_);
    for (int i = 0; i < static_cast<int>(block_.instrs.size()); ++i) {
      const Instr& in = block_.instrs[i];
      if (in.op == Opcode::WAIT_FLAG && sets[i] < 0)
        fail(i, std::string("WAIT_FLAG ") + pipe_name(in.flag_src) + " -> " + pipe_name(in.flag_dst) + " event " +
                    n(in.event) + " has no matching SET_FLAG");
    }
  }

  const BlockProgram& block_;
  std::map<int, const LocalBuffer*> buffers_;
};

// ---- the program around the blocks ---------------------------------------------------------

void check_tensors(const Program& p) {
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    const GmTensor& g = p.tensors[t];
    if (g.id != static_cast<int>(t)) malformed("tensor '" + g.name + "' has id " + n(g.id) + " at index " + n(static_cast<int64_t>(t)));
    int at = static_cast<int>(t);
    for (size_t hops = 0; p.tensors[at].alias_of >= 0; ++hops) {
      const int next = p.tensors[at].alias_of;
      if (!in_range(next, p.tensors.size())) malformed("tensor '" + p.tensors[at].name + "' aliases unknown tensor " + n(next));
      if (hops > p.tensors.size()) malformed("tensor aliases form a cycle at '" + g.name + "'");
      at = next;
    }
  }
}

// Whether the operand names one of its task's binding slots (a flag's operands do not).
bool names_gm_slot(const Instr& in, const Operand& o) {
  return o.level == MemLevel::GM && in.op != Opcode::SET_FLAG && in.op != Opcode::WAIT_FLAG;
}

// The highest binding slot a GM operand of the block reads, -1 for none: what every task
// running the block must bind. Worked out once per block, since a block runs in many
// tasks (thousands for a flash_attention program).
int highest_gm_slot(const BlockProgram& block) {
  int highest = -1;
  for (const Instr& in : block.instrs) {
    auto note = [&](const Operand& o) {
      if (names_gm_slot(in, o)) highest = std::max(highest, o.id);
    };
    note(in.dst);
    for (const Operand& src : in.src) note(src);
  }
  return highest;
}

// Every GM operand of the block names a slot the task binds (`highest_slot`: the
// block's highest_gm_slot); the first that does not is named.
void check_bindings(const Task& task, const BlockProgram& block, int highest_slot, size_t tensor_count) {
  for (const TensorBinding& b : task.bindings)
    if (!in_range(b.tensor, tensor_count)) malformed("task " + n(task.id) + " binds unknown tensor " + n(b.tensor));
  if (highest_slot < static_cast<int>(task.bindings.size())) return;
  for (size_t i = 0; i < block.instrs.size(); ++i) {
    const Instr& in = block.instrs[i];
    auto check = [&](const Operand& o) {
      if (names_gm_slot(in, o) && !in_range(o.id, task.bindings.size()))
        malformed("task " + n(task.id) + " runs block '" + block.name + "', whose instr " + n(static_cast<int64_t>(i)) +
                  " (" + opcode_name(in.op) + ") reads binding slot " + n(o.id) + " of " +
                  n(static_cast<int64_t>(task.bindings.size())));
    };
    check(in.dst);
    for (const Operand& src : in.src) check(src);
  }
}

// Kernels list every task once; kernels, tasks, blocks and dependencies exist.
std::vector<int> check_graph_ids(const Program& p) {
  std::vector<int> kernel_of(p.tasks.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const Kernel& kernel = p.kernels[k];
    for (int t : kernel.tasks) {
      if (!in_range(t, p.tasks.size())) malformed("kernel '" + kernel.name + "' lists unknown task " + n(t));
      if (kernel_of[t] >= 0) malformed("task " + n(t) + " is listed by two kernels");
      kernel_of[t] = static_cast<int>(k);
    }
    for (int a : kernel.after)
      if (!in_range(a, p.kernels.size()) || a == static_cast<int>(k))
        malformed("kernel '" + kernel.name + "' runs after kernel " + n(a));
  }
  std::vector<int> highest_slot(p.blocks.size());
  for (size_t b = 0; b < p.blocks.size(); ++b) highest_slot[b] = highest_gm_slot(p.blocks[b]);
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    const Task& task = p.tasks[t];
    auto who = [&] { return "task " + n(static_cast<int64_t>(t)); };
    if (task.id != static_cast<int>(t)) malformed("task at index " + n(static_cast<int64_t>(t)) + " has id " + n(task.id));
    if (kernel_of[t] < 0) malformed(who() + " belongs to no kernel's task list");
    if (!in_range(task.block, p.blocks.size())) malformed(who() + " runs unknown block " + n(task.block));
    for (int d : task.deps)
      if (!in_range(d, p.tasks.size()) || d == static_cast<int>(t)) malformed(who() + " depends on task " + n(d));
    check_bindings(task, p.blocks[task.block], highest_slot[task.block], p.tensors.size());
  }
  return kernel_of;
}

// Kahn's algorithm over tasks and kernel ends: a task waits for its deps and for the
// end of each kernel its kernel runs after; a kernel ends when its tasks have.
void check_acyclic(const Program& p, const std::vector<int>& kernel_of) {
  const int tasks = static_cast<int>(p.tasks.size()), nodes = tasks + static_cast<int>(p.kernels.size());
  std::vector<std::vector<int>> next(static_cast<size_t>(nodes));
  std::vector<int> waits(static_cast<size_t>(nodes), 0);
  auto edge = [&](int from, int to) { next[from].push_back(to), ++waits[to]; };
  for (size_t k = 0; k < p.kernels.size(); ++k)
    for (int a : p.kernels[k].after) edge(tasks + a, tasks + static_cast<int>(k));
  for (int t = 0; t < tasks; ++t) {
    for (int d : p.tasks[t].deps) edge(d, t);
    for (int a : p.kernels[kernel_of[t]].after) edge(tasks + a, t);
    edge(t, tasks + kernel_of[t]);
  }
  std::deque<int> ready;
  for (int v = 0; v < nodes; ++v)
    if (waits[v] == 0) ready.push_back(v);
  int done = 0;
  for (; !ready.empty(); ++done) {
    const int v = ready.front();
    ready.pop_front();
    for (int w : next[v])
      if (--waits[w] == 0) ready.push_back(w);
  }
  if (done != nodes) malformed("the execute graph has a cycle: " + n(nodes - done) + " tasks and kernels never become ready");
}

}  // namespace

std::vector<int> matching_set_flags(const BlockProgram& block) {
  using Key = std::tuple<int, Pipe, int, Pipe, int>;
  auto key_of = [](const Instr& in) { return Key{in.set_unit(), in.flag_src, in.wait_unit(), in.flag_dst, in.event}; };
  std::map<Key, std::vector<int>> sets;
  for (int i = 0; i < static_cast<int>(block.instrs.size()); ++i) {
    const Instr& in = block.instrs[i];
    if (in.op == Opcode::SET_FLAG) sets[key_of(in)].push_back(i);
  }
  std::vector<int> matched(block.instrs.size(), -1);
  std::map<Key, size_t> seen;
  for (int i = 0; i < static_cast<int>(block.instrs.size()); ++i) {
    const Instr& in = block.instrs[i];
    if (in.op != Opcode::WAIT_FLAG) continue;
    const Key key = key_of(in);
    const size_t k = seen[key]++;
    const std::vector<int>& list = sets[key];
    if (k < list.size()) matched[i] = list[k];
  }
  return matched;
}

void verify_block(const BlockProgram& block) { BlockVerifier(block).run(); }

void verify_program(const Program& program) {
  check_tensors(program);
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    const BlockProgram& block = program.blocks[b];
    if (block.id != static_cast<int>(b)) malformed("block '" + block.name + "' has id " + n(block.id) + " at index " + n(static_cast<int64_t>(b)));
    verify_block(block);
  }
  check_acyclic(program, check_graph_ids(program));
}

}  // namespace pto
