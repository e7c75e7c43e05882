// UB buffer allocation with liveness-based reuse (see ub_allocation.h).
#include "core/passes/ub_allocation.h"

#include <algorithm>

namespace pto::passes {
namespace {

struct Live {
  int first, last;
};

// Places `bytes` at the lowest aligned offset >= base clear of every buffer of out[from..]
// alive at the same time.
int64_t first_fit(const std::vector<UbBuffer>& placed, const std::vector<Live>& live, size_t from, int64_t base,
                  int64_t bytes, Live range, int align_bytes) {
  int64_t offset = base;
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t j = from; j < placed.size(); ++j) {
      const UbBuffer& p = placed[j];
      const bool overlap_time = live[j - from].first <= range.last && range.first <= live[j - from].last;
      if (overlap_time && byte_ranges_overlap(offset, bytes, p.offset, p.bytes)) {
        offset = align_up(p.offset + p.bytes, align_bytes);
        moved = true;
      }
    }
  }
  return offset;
}

int64_t mask_bytes(DimMask mask, DType dtype, const Shape& tile) {
  int64_t elems = 1;
  for (size_t d = 0; d < tile.size(); ++d)
    if (spans(mask, static_cast<int>(d))) elems *= tile[d];
  return elems * dtype_size(dtype);
}

// Bump allocation: buffers that live as long as the task.
class Bump {
 public:
  Bump(VecTiling& out, int64_t base, int align) : out_(out), top_(base), align_(align) {}
  void value(int v, const VecValue& val, int slot, const Shape& tile) {
    UbBuffer b;
    b.value = v;
    b.slot = slot;
    b.bytes = value_bytes(val, tile);
    place(std::move(b));
  }
  void scratch(const std::string& name, DimMask mask, DType dtype, const Shape& tile) {
    UbBuffer b;
    b.scratch = name;
    b.mask = mask;
    b.dtype = dtype;
    b.bytes = mask_bytes(mask, dtype, tile);
    place(std::move(b));
  }
  int64_t top() const { return top_; }

 private:
  void place(UbBuffer b) {
    b.offset = top_;
    top_ = align_up(top_ + b.bytes, align_);
    out_.ub_bytes = std::max(out_.ub_bytes, b.offset + b.bytes);
    out_.buffers.push_back(std::move(b));
  }
  VecTiling& out_;
  int64_t top_;
  int align_;
};

std::string merge_first_name(const VectorBody& body, const OnlineMerge& m) {
  return body.values[body.steps[m.first].dst].name;
}
std::string merge_second_name(const VectorBody& body, const OnlineMerge& m) {
  return body.values[body.steps[m.second].dst].name;
}

}  // namespace

int64_t value_bytes(const VecValue& v, const Shape& tile) { return mask_bytes(v.mask, v.dtype, tile); }

void allocate_ub(const VectorBody& body, const Shape& tile, int nbuffer, int align_bytes, VecTiling& out) {
  const int end = body.end_position();
  std::vector<Live> live;
  out.buffers.clear();
  out.ub_bytes = 0;
  for (size_t vi = 0; vi < body.values.size(); ++vi) {
    const VecValue& v = body.values[vi];
    const bool load = v.kind == ValueKind::Load;
    const int slots = load ? nbuffer : 1;
    const Live range{v.def, load && nbuffer >= 2 ? end : v.last_use};
    const int64_t bytes = value_bytes(v, tile);
    for (int s = 0; s < slots; ++s) {
      const int64_t offset = first_fit(out.buffers, live, 0, 0, bytes, range, align_bytes);
      UbBuffer b;
      b.value = static_cast<int>(vi);
      b.slot = s;
      b.bytes = bytes;
      b.offset = offset;
      out.buffers.push_back(std::move(b));
      live.push_back(range);
      out.ub_bytes = std::max(out.ub_bytes, offset + bytes);
    }
  }
}

std::vector<StreamScratch> stream_scratch(const VectorBody& body, const StreamPlan& plan) {
  std::vector<StreamScratch> out;
  auto row = [&](const std::string& name, DType t = DType::F32) { out.push_back({name, false, t, -1}); };
  for (size_t p = 0; p < plan.passes.size(); ++p) {
    const StreamPass& pass = plan.passes[p];
    for (int step : pass.reductions) {
      const VecValue& v = body.values[body.steps[step].dst];
      row(v.name + ".acc", v.dtype);
      row(v.name + ".part", v.dtype);
    }
    for (const OnlineMerge& m : pass.merges) {
      const std::string a = merge_first_name(body, m), b = merge_second_name(body, m);
      const int chunk_pass = static_cast<int>(p);
      if (m.kind == MergeKind::SoftmaxSum) {
        for (const std::string& s : {a + ".acc", b + ".acc", a + ".chunk", a + ".drop", a + ".alpha", b + ".chunk",
                                     b + ".scaled"})
          row(s);
        out.push_back({b + ".shifted", true, DType::F32, chunk_pass});
        out.push_back({b + ".exp", true, DType::F32, chunk_pass});
      } else {
        for (const std::string& s : {a + ".shift", a + ".mean[0]", a + ".mean[1]", a + ".mean_x", b + ".acc",
                                     a + ".chunk", a + ".chunk_mean", b + ".chunk", a + ".delta", a + ".step",
                                     a + ".delta_sq", b + ".weighted", b + ".sum"})
          row(s);
        out.push_back({b + ".centered", true, DType::F32, chunk_pass});
        out.push_back({b + ".dev", true, DType::F32, chunk_pass});
        out.push_back({b + ".sq", true, DType::F32, chunk_pass});
      }
    }
  }
  return out;
}

void allocate_stream_ub(const VectorBody& body, const Shape& tile, int nbuffer, int align_bytes, VecTiling& out) {
  const StreamPlan& plan = *out.stream;
  const int dim = plan.dim;
  out.buffers.clear();
  out.ub_bytes = 0;
  // Chunk inputs: n slots each (no more than there are chunks), shared by the passes.
  const int64_t slots = std::min<int64_t>(nbuffer, static_cast<int64_t>(plan.passes.size()) * out.chunks.count);
  std::vector<char> chunk_load(body.values.size(), 0);
  for (const StreamPass& pass : plan.passes)
    for (int l : pass.loads) chunk_load[body.loads[l].value] = 1;
  Bump bump(out, 0, align_bytes);
  for (size_t v = 0; v < body.values.size(); ++v)
    if (chunk_load[v])
      for (int s = 0; s < slots; ++s) bump.value(static_cast<int>(v), body.values[v], s, tile);
  // The whole task: row inputs and every row value, with the accumulators' other halves.
  for (int l : plan.row_loads) bump.value(body.loads[l].value, body.values[body.loads[l].value], 0, tile);
  for (size_t v = 0; v < body.values.size(); ++v) {
    const VecValue& val = body.values[v];
    if (val.kind != ValueKind::Load && !spans(val.mask, dim)) bump.value(static_cast<int>(v), val, 0, tile);
  }
  const std::vector<StreamScratch> scratch = stream_scratch(body, plan);
  DimMask row_mask = 0, chunk_mask = 0;
  for (size_t d = 0; d < tile.size(); ++d) {
    chunk_mask |= 1u << d;
    if (static_cast<int>(d) != dim) row_mask |= 1u << d;
  }
  for (const StreamScratch& s : scratch)
    if (!s.chunk) bump.scratch(s.name, row_mask, s.dtype, tile);
  const int64_t chunk_base = bump.top();

  // Per pass, one chunk's values: first-fit by liveness. Steps are at positions 1..n in
  // order, the merges' temporaries after them; stored values live to the end.
  for (size_t p = 0; p < plan.passes.size(); ++p) {
    const StreamPass& pass = plan.passes[p];
    const size_t from = out.buffers.size();
    const int end = static_cast<int>(pass.steps.size()) + 2;
    std::vector<int> position(body.values.size(), -1), last(body.values.size(), -1);
    for (size_t i = 0; i < pass.steps.size(); ++i) position[body.steps[pass.steps[i]].dst] = static_cast<int>(i) + 1;
    auto use = [&](int v, int at) { if (position[v] >= 0) last[v] = std::max(last[v], at); };
    for (size_t i = 0; i < pass.steps.size(); ++i)
      for (int v : body.steps[pass.steps[i]].src) use(v, static_cast<int>(i) + 1);
    for (int step : pass.reductions) use(body.steps[step].src[0], end - 1);
    for (const OnlineMerge& m : pass.merges) use(m.source, end - 1);
    for (int st : pass.stores) use(body.stores[st].value, end);
    std::vector<Live> live;
    auto place = [&](UbBuffer b, Live range) {
      b.pass = static_cast<int>(p);
      b.offset = first_fit(out.buffers, live, from, chunk_base, b.bytes, range, align_bytes);
      out.ub_bytes = std::max(out.ub_bytes, b.offset + b.bytes);
      out.buffers.push_back(std::move(b));
      live.push_back(range);
    };
    for (int step : pass.steps) {
      const int v = body.steps[step].dst;
      UbBuffer b;
      b.value = v;
      b.bytes = value_bytes(body.values[v], tile);
      place(std::move(b), {position[v], std::max(last[v], position[v])});
    }
    for (const StreamScratch& s : scratch) {
      if (!s.chunk || s.pass != static_cast<int>(p)) continue;
      UbBuffer b;
      b.scratch = s.name;
      b.mask = chunk_mask;
      b.dtype = s.dtype;
      b.bytes = mask_bytes(chunk_mask, s.dtype, tile);
      place(std::move(b), {end - 1, end - 1});
    }
  }
}

}  // namespace pto::passes
