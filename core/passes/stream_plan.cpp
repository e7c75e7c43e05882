// The schedule of a split reduction (see stream_plan.h).
#include "core/passes/stream_plan.h"

#include <algorithm>
#include <cmath>

namespace pto::passes {
namespace {

class Planner {
 public:
  Planner(const VectorBody& body, int dim) : body_(body), dim_(dim) {
    def_.assign(body.values.size(), -1);
    for (size_t i = 0; i < body.steps.size(); ++i) def_[body.steps[i].dst] = static_cast<int>(i);
  }

  bool check(std::string& why) const {
    for (size_t i = 0; i < body_.steps.size(); ++i) {
      const VecStep& s = body_.steps[i];
      if (s.op != Opcode::TREDUCE || !spans(mask_of(s.src[0]), s.reduce_dim) || s.reduce_dim == dim_) continue;
      why = "\"" + body_.values[s.dst].name + "\" reduces dim " + std::to_string(s.reduce_dim) +
            " while the tile cuts dim " + std::to_string(dim_) + ": a split reduction streams one dim";
      return false;
    }
    return true;
  }

  StreamPlan plan(ReduceForm form) {
    if (form == ReduceForm::Online) find_merges();
    assign_levels();
    StreamPlan p;
    p.dim = dim_;
    for (size_t i = 0; i < body_.loads.size(); ++i)
      if (!chunk(body_.loads[i].value)) p.row_loads.push_back(static_cast<int>(i));
    int passes = 1;
    for (size_t i = 0; i < body_.steps.size(); ++i)
      if (folds(static_cast<int>(i))) passes = std::max(passes, level_[source_of(static_cast<int>(i))] + 1);
    for (const GmAccess& s : body_.stores)
      if (chunk(s.value)) passes = std::max(passes, level_[s.value] + 1);
    p.passes.resize(passes);
    place_steps(p);
    place_stores(p);
    for (StreamPass& pass : p.passes) gather_chunk_work(pass);
    return p;
  }

 private:
  DimMask mask_of(int value) const { return body_.values[value].mask; }
  bool chunk(int value) const { return spans(mask_of(value), dim_); }
  const VecStep* def_step(int value) const { return def_[value] < 0 ? nullptr : &body_.steps[def_[value]]; }

  // A reduction over the streamed dim of a chunk value: it folds chunk by chunk.
  bool folds(int step) const {
    const VecStep& s = body_.steps[step];
    return s.op == Opcode::TREDUCE && s.reduce_dim == dim_ && chunk(s.src[0]);
  }
  // What a folding step reads per chunk; for a merged pair, the value both reduce.
  int source_of(int step) const {
    for (const OnlineMerge& m : merges_)
      if (m.second == step || m.first == step) return m.source;
    return body_.steps[step].src[0];
  }
  bool merged(int step) const {
    return std::any_of(merges_.begin(), merges_.end(), [&](const OnlineMerge& m) { return m.first == step || m.second == step; });
  }

  // The folding step of kind `op` that defines `value`, or -1.
  int reduction_defining(int value, OpKind op) const {
    const VecStep* s = def_step(value);
    if (!s || s->vop != op || !folds(def_[value])) return -1;
    return def_[value];
  }
  bool is_step(const VecStep* s, OpKind op, bool scalar) const {
    return s && s->op == Opcode::TVEC && s->vop == op && s->scalar.has_value() == scalar;
  }

  // sum(exp(x - amax(x))) and sum((x - sum(x) / n)^2), each reduction in one pair at most.
  void find_merges() {
    const double n = static_cast<double>(body_.iteration[dim_]);
    for (size_t i = 0; i < body_.steps.size(); ++i) {
      const int second = static_cast<int>(i);
      const VecStep& s = body_.steps[i];
      if (!folds(second) || s.vop != OpKind::Sum) continue;
      const VecStep* e = def_step(s.src[0]);
      if (is_step(e, OpKind::Exp, false)) {
        const VecStep* t = def_step(e->src[0]);
        if (!is_step(t, OpKind::Sub, false)) continue;
        const int first = reduction_defining(t->src[1], OpKind::Amax);
        if (first >= 0 && body_.steps[first].src[0] == t->src[0] && !merged(first))
          merges_.push_back({MergeKind::SoftmaxSum, first, second, t->src[0]});
        continue;
      }
      if (!is_step(e, OpKind::Mul, false) || e->src[0] != e->src[1]) continue;
      const VecStep* c = def_step(e->src[0]);
      if (!is_step(c, OpKind::Sub, false)) continue;
      const VecStep* mean = def_step(c->src[1]);
      if (!is_step(mean, OpKind::Mul, true) || mean->scalar_first || std::abs(*mean->scalar * n - 1.0) > 1e-12) continue;
      const int first = reduction_defining(mean->src[0], OpKind::Sum);
      if (first >= 0 && body_.steps[first].src[0] == c->src[0] && !merged(first))
        merges_.push_back({MergeKind::Variance, first, second, c->src[0]});
    }
  }

  // A value's level: the pass from which on it can be read. Chunk inputs are reloaded in
  // every pass; a folded reduction completes after the pass that reads its source.
  void assign_levels() {
    level_.assign(body_.values.size(), 0);
    for (size_t i = 0; i < body_.steps.size(); ++i) {
      const VecStep& s = body_.steps[i];
      int level = 0;
      if (folds(static_cast<int>(i))) {
        level = level_[source_of(static_cast<int>(i))] + 1;
      } else {
        for (int v : s.src) level = std::max(level, level_[v]);
      }
      level_[s.dst] = level;
    }
  }

  // Folding steps go to the pass that reads their source, merged pairs together; steps
  // on row values run once, after the pass that completes what they read.
  void place_steps(StreamPlan& p) const {
    for (size_t i = 0; i < body_.steps.size(); ++i) {
      const int step = static_cast<int>(i);
      const VecStep& s = body_.steps[i];
      if (folds(step)) {
        StreamPass& pass = p.passes[level_[source_of(step)]];
        if (!merged(step)) {
          pass.reductions.push_back(step);
        } else {
          for (const OnlineMerge& m : merges_)
            if (m.second == step) pass.merges.push_back(m);
        }
        continue;
      }
      if (chunk(s.dst)) continue;  // recomputed per chunk where needed
      const int level = level_[s.dst];
      (level == 0 ? p.row_steps : p.passes[level - 1].row_steps).push_back(step);
    }
  }

  void place_stores(StreamPlan& p) const {
    for (size_t i = 0; i < body_.stores.size(); ++i) {
      const int value = body_.stores[i].value;
      if (chunk(value)) {
        p.passes[level_[value]].stores.push_back(static_cast<int>(i));
      } else {
        p.passes.back().row_stores.push_back(static_cast<int>(i));
      }
    }
  }

  // The chunk values a pass needs (what its reductions and merges read, what it stores)
  // and, transitively, the chunk steps and loads that make them.
  void gather_chunk_work(StreamPass& pass) const {
    std::vector<char> needed(body_.values.size(), 0);
    std::vector<int> todo;
    auto need = [&](int value) {
      if (chunk(value) && !needed[value]) needed[value] = 1, todo.push_back(value);
    };
    for (int step : pass.reductions) need(body_.steps[step].src[0]);
    for (const OnlineMerge& m : pass.merges) need(m.source);
    for (int store : pass.stores) need(body_.stores[store].value);
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      if (const VecStep* s = def_step(v))
        for (int src : s->src) need(src);
    }
    for (size_t i = 0; i < body_.loads.size(); ++i)
      if (needed[body_.loads[i].value]) pass.loads.push_back(static_cast<int>(i));
    for (size_t i = 0; i < body_.steps.size(); ++i)
      if (needed[body_.steps[i].dst] && !folds(static_cast<int>(i))) pass.steps.push_back(static_cast<int>(i));
  }

  const VectorBody& body_;
  int dim_;
  std::vector<int> def_;     // per value: the step that defines it, -1 for loads
  std::vector<int> level_;   // per value
  std::vector<OnlineMerge> merges_;
};

}  // namespace

std::optional<StreamPlan> plan_stream(const VectorBody& body, int dim, ReduceForm form, std::string& why) {
  Planner planner(body, dim);
  if (!planner.check(why)) return std::nullopt;
  return planner.plan(form);
}

}  // namespace pto::passes
