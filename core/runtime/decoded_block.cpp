// Decoding of a BlockProgram (DecodedBlock): buffer storage, operand windows, step forms, and the
// TMOV-as-view analysis.
#include "core/runtime/decoded_block.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/runtime/convert.h"
#include "core/runtime/panels.h"

namespace pto::runtime {
namespace {

constexpr int64_t kArenaAlign = 64;
constexpr int64_t kL0cRowAlign = 16;  // floats: C rows start 64-byte aligned

class Decoder {
 public:
  explicit Decoder(const BlockProgram& block) : block_(block) {
    plan_.block = block.id;
    plan_.name = block.name;
  }

  DecodedBlock run() {
    for (const LocalBuffer& b : block_.buffers) add_buffer(b);
    mark_l0_views();
    for (int i = 0; i < static_cast<int>(block_.instrs.size()); ++i) add_step(i);
    return std::move(plan_);
  }

 private:
  std::string where(int instr) const {
    return "block '" + block_.name + "' instr " + std::to_string(instr) + " (" +
           opcode_name(block_.instrs[instr].op) + ")";
  }

  [[noreturn]] void fail(int instr, const std::string& what) const {
    internal_error("runtime: " + where(instr) + ": " + what);
  }

  void add_buffer(const LocalBuffer& b) {
    DecodedBuffer p;
    p.id = b.id;
    p.name = b.name;
    p.level = b.level;
    p.dtype = b.dtype;
    p.lane = lane_of(b.dtype);
    p.shape = Dims::of(b.shape);
    if (b.level == MemLevel::L0A || b.layout == Layout::FractalA) p.panel_width = kPanelRowsA;
    if (b.level == MemLevel::L0B || b.layout == Layout::FractalB) p.panel_width = kPanelColsB;
    int64_t elements = 0;
    if (p.panel_width) {
      for (int d = 0; d + 2 < p.shape.rank; ++d)
        if (p.shape[d] != 1)
          internal_error("runtime: Cube buffer '" + b.name + "' " + shape_str(b.shape) + " is not a matrix");
      const int64_t rows = p.shape.rank >= 2 ? p.shape.back(1) : 1;
      const int64_t cols = p.shape.rank >= 1 ? p.shape.back(0) : 1;
      const bool is_a = p.panel_width == kPanelRowsA;
      const int64_t lanes = is_a ? rows : cols, depth = is_a ? cols : rows;
      p.panel_stride = p.panel_width * depth;
      p.lane = DType::F32;  // panels hold int8 operands as exact floats too
      elements = panel_elements(p.panel_width, lanes, depth);
    } else {
      Dims storage = p.shape;
      if (b.level == MemLevel::L0C && storage.rank > 0) storage[storage.rank - 1] = align_up(storage.back(), kL0cRowAlign);
      p.strides = row_major_strides(storage);
      elements = storage.elements();
    }
    p.bytes = std::max<int64_t>(elements, 1) * kLaneBytes;
    p.arena_offset = plan_.arena_bytes;
    plan_.arena_bytes += align_up(p.bytes, kArenaAlign);
    index_[b.id] = static_cast<int>(plan_.buffers.size());
    plan_.buffers.push_back(std::move(p));
  }

  // The operand's window in its buffer's rank (leading dims padded with offset 0,
  // extent 1; the verifier saw that the window lies inside the buffer).
  LocalOperand local(const Operand& op) const {
    LocalOperand l;
    l.buf = index_.at(op.id);
    const DecodedBuffer& b = plan_.buffers[l.buf];
    const int rank = b.shape.rank, q = static_cast<int>(op.extent.size());
    const int extra = q - rank;  // > 0: leading operand dims beyond the buffer's rank
    auto off = [&](int od) { return op.offset.empty() ? 0 : op.offset[od]; };
    l.offset.rank = l.extent.rank = rank;
    for (int bd = 0; bd < rank; ++bd) {
      const int od = bd + extra;
      l.offset[bd] = od >= 0 ? off(od) : 0;
      l.extent[bd] = od >= 0 ? op.extent[od] : 1;
    }
    l.byte_offset = b.arena_offset;
    if (!b.panel_width)
      for (int d = 0; d < rank; ++d) l.byte_offset += l.offset[d] * b.strides[d] * kLaneBytes;
    l.strides = b.strides;
    return l;
  }

  // Re-strides a source operand for iterating `extent`.
  void align_to(LocalOperand& src, const Dims& extent, Match match, int instr) const {
    src.strides = align_strides(extent, src.extent, plan_.buffers[src.buf].strides, match, where(instr));
  }

  const DecodedBuffer& buf(const LocalOperand& l) const { return plan_.buffers[l.buf]; }

  // The lane (row for A panels, column for B panels) where a window starts.
  static int64_t panel_lane(const DecodedBuffer& b, const LocalOperand& l) {
    return b.panel_width == kPanelRowsA ? l.offset.back(1) : l.offset.back(0);
  }

  static bool at_origin(const LocalOperand& l) {
    for (int d = 0; d < l.offset.rank; ++d)
      if (l.offset[d] != 0) return false;
    return true;
  }

  static bool covers_all(const DecodedBuffer& b, const LocalOperand& l) {
    return at_origin(l) && l.extent.back(0) == b.shape.back(0) && l.extent.back(1) == b.shape.back(1);
  }

  void check_panel_window(int instr, const LocalOperand& l) const {
    const DecodedBuffer& b = buf(l);
    if (b.shape.rank < 2) fail(instr, "Cube buffer '" + b.name + "' needs two dims");
    if (panel_lane(b, l) % b.panel_width != 0)
      fail(instr, "window of Cube buffer '" + b.name + "' starts at " + shape_str(l.offset.shape()) +
                      ", not on a " + std::to_string(b.panel_width) + "-element panel boundary");
  }

  // ---- TMOV L1 -> L0 as a view --------------------------------------------------------

  static const Operand* local_dst(const Instr& in) {
    if (in.op == Opcode::TSTORE || in.op == Opcode::SET_FLAG || in.op == Opcode::WAIT_FLAG) return nullptr;
    return in.dst.level == MemLevel::GM ? nullptr : &in.dst;
  }

  bool writes(const Instr& in, int buffer_id) const {
    const Operand* d = local_dst(in);
    return d && d->id == buffer_id;
  }

  bool reads(const Instr& in, int buffer_id) const {
    for (const Operand& s : in.src)
      if (s.level != MemLevel::GM && s.id == buffer_id) return true;
    return false;
  }

  // A TMOV into an L0 buffer may be a view into its L1 source when the L1 window stays
  // unwritten until the last read of the L0 buffer before its next write.
  bool view_is_safe(int i) const {
    const Instr& mov = block_.instrs[i];
    const int l0 = mov.dst.id, l1 = mov.src[0].id;
    int last_read = i;
    for (int j = i + 1; j < static_cast<int>(block_.instrs.size()); ++j) {
      if (writes(block_.instrs[j], l0)) break;
      if (reads(block_.instrs[j], l0)) last_read = j;
    }
    for (int j = i + 1; j < last_read; ++j)
      if (writes(block_.instrs[j], l1)) return false;
    return true;
  }

  bool view_candidate(int i) const {
    const Instr& in = block_.instrs[i];
    if (in.op != Opcode::TMOV || in.src.size() != 1 || in.src[0].level == MemLevel::GM) return false;
    auto dst = index_.find(in.dst.id), src = index_.find(in.src[0].id);
    if (dst == index_.end() || src == index_.end()) return false;
    const DecodedBuffer& d = plan_.buffers[dst->second];
    const DecodedBuffer& s = plan_.buffers[src->second];
    if (s.panel_width != d.panel_width || s.shape.rank < 2) return false;
    const LocalOperand dl = local(in.dst), sl = local(in.src[0]);
    return at_origin(dl) && panel_lane(s, sl) % s.panel_width == 0 && view_is_safe(i);
  }

  void mark_l0_views() {
    for (DecodedBuffer& b : plan_.buffers) {
      if (b.level != MemLevel::L0A && b.level != MemLevel::L0B) continue;
      bool any = false, all = true;
      for (int i = 0; i < static_cast<int>(block_.instrs.size()) && all; ++i) {
        if (!writes(block_.instrs[i], b.id)) continue;
        any = true;
        all = view_candidate(i);
      }
      b.l0_view = any && all;
    }
  }

  // ---- steps ---------------------------------------------------------------------------

  void push(Step s, int instr) {
    s.instr = instr;
    plan_.steps.push_back(std::move(s));
    plan_.labels.push_back(where(instr));
  }

  static GmOperand gm(const Operand& op) { return {op.id, op.offset, op.extent}; }

  void add_step(int i) {
    const Instr& in = block_.instrs[i];
    Step s;
    switch (in.op) {
      case Opcode::SET_FLAG:
      case Opcode::WAIT_FLAG:
        return;
      case Opcode::TLOAD: {
        s.dst = local(in.dst);
        s.gm = gm(in.src[0]);
        s.transpose = in.transpose;
        const DecodedBuffer& d = buf(s.dst);
        if (d.panel_width) {
          check_panel_window(i, s.dst);
          s.kind = StepKind::LoadPanels;
          s.clear_first = at_origin(s.dst) && !covers_all(d, s.dst);
        } else {
          s.kind = StepKind::LoadRows;
        }
        return push(s, i);
      }
      case Opcode::TMOV: {
        s.dst = local(in.dst);
        s.a = local(in.src[0]);
        const DecodedBuffer& d = buf(s.dst);
        const DecodedBuffer& a = buf(s.a);
        if (d.panel_width) {
          check_panel_window(i, s.dst);
          s.kind = d.l0_view ? StepKind::MovView : StepKind::MovPanels;
          s.clear_first = at_origin(s.dst) && !covers_all(d, s.dst);
          if (!a.panel_width) {
            align_to(s.a, in.transpose ? s.a.extent : s.dst.extent, Match::SameElements, i);
            if (in.transpose) {  // a row-major [.., r, c] block into [.., c, r] panels
              swap_last_two(s.a.extent);
              swap_last_two(s.a.strides);
            }
          }
          return push(s, i);
        }
        if (a.panel_width) fail(i, "copying Cube operand '" + a.name + "' back into a row-major buffer is not supported");
        s.kind = StepKind::Vector;
        s.vop = OpKind::Cast;
        s.extent = s.dst.extent;
        align_to(s.a, s.extent, Match::SameElements, i);
        return push(s, i);
      }
      case Opcode::TMATMUL: {
        s.kind = StepKind::Matmul;
        s.dst = local(in.dst);
        s.a = local(in.src[0]);
        s.b = local(in.src[1]);
        s.has_b = true;
        s.accumulate = in.accumulate;
        check_panel_window(i, s.a);
        check_panel_window(i, s.b);
        return push(s, i);
      }
      case Opcode::TVEC:
        if (in.vop == OpKind::CausalMask) return add_mask(i, in);
        if (is_reduction(in.vop)) return add_reduce(i, in);
        return add_vector(i, in);
      case Opcode::TREDUCE:
        return add_reduce(i, in);
      case Opcode::TFILL:
        s.kind = StepKind::Fill;
        s.dst = local(in.dst);
        s.extent = s.dst.extent;
        s.scalar = in.scalar;
        return push(s, i);
      case Opcode::TSTORE:
        s.kind = StepKind::Store;
        s.a = local(in.src[0]);
        s.gm = gm(in.dst);
        s.accumulate = in.accumulate;
        return push(s, i);
    }
    fail(i, "unknown opcode");
  }

  void add_vector(int i, const Instr& in) {
    Step s;
    s.kind = StepKind::Vector;
    s.vop = in.vop;
    s.dst = local(in.dst);
    s.extent = s.dst.extent;
    s.a = local(in.src[0]);
    align_to(s.a, s.extent, Match::Broadcast, i);
    s.scalar = in.scalar;
    s.scalar_first = in.scalar_first;
    if (is_binary(in.vop) && !in.scalar) {
      s.b = local(in.src[1]);
      s.has_b = true;
      align_to(s.b, s.extent, Match::Broadcast, i);
    }
    push(s, i);
  }

  void add_reduce(int i, const Instr& in) {
    Step s;
    s.kind = StepKind::Reduce;
    s.vop = in.vop;
    s.dst = local(in.dst);
    s.a = local(in.src[0]);
    s.extent = s.a.extent;
    const int tile_rank = static_cast<int>(in.src[0].extent.size());
    s.reduce_dim = in.reduce_dim + (s.extent.rank - tile_rank);
    if (in.reduce_dim < 0 || s.reduce_dim < 0 || s.reduce_dim >= s.extent.rank)
      fail(i, "reduce dim " + std::to_string(in.reduce_dim) + " outside the rank-" + std::to_string(tile_rank) + " tile");
    // dst iterates the source extent with stride 0 along the reduced dim.
    s.dst.strides = align_strides(s.extent, s.dst.extent, buf(s.dst).strides, Match::Broadcast, where(i));
    s.dst.strides[s.reduce_dim] = 0;
    push(s, i);
  }

  void add_mask(int i, const Instr& in) {
    Step s;
    s.kind = StepKind::Mask;
    s.dst = local(in.dst);
    s.extent = s.dst.extent;
    s.a = local(in.src[0]);
    align_to(s.a, s.extent, Match::Broadcast, i);
    s.gm = gm(in.src[1]);
    push(s, i);
  }

  const BlockProgram& block_;
  DecodedBlock plan_;
  std::map<int, int> index_;  // buffer id -> index
};

}  // namespace

DecodedBlock decode_block(const BlockProgram& block) { return Decoder(block).run(); }

}  // namespace pto::runtime
