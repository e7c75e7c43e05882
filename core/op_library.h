// The op library: named operators a user can tune, each with its shape signature,
// a builder of its TensorGraph, a hand-written reference kernel and the default
// TileConfig that a PyPTO user would hand-pick today.
//
// `pto-tune ops` lists this registry. References are plain loops with fp64
// accumulation; they are written independently of the graph builders so that a test
// can check the builders against them.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "core/tensor_graph.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto {

struct Target;

struct OpDef {
  std::string name;                    // "matmul"
  std::vector<std::string> dims;       // shape signature, e.g. {"M","K","N"}
  std::string summary;                 // one line for `pto-tune ops`
  std::vector<std::string> attrs;      // attribute names it accepts, e.g. {"causal"}
  std::vector<DType> dtypes;           // element types it accepts, the first is the usual one
  std::function<TensorGraph(const Workload&)> build;
  // Inputs in graph-input order -> outputs in graph-output order, computed in fp64
  // and rounded to the output dtype.
  std::function<std::vector<HostTensor>(const Workload&, const std::vector<HostTensor>&)> reference;
  // What a PyPTO user would hand-pick for this workload (ascend-facts.md), before any
  // clamping to the shape or the target; default_config() refines it.
  std::function<TileConfig(const Workload&)> hand_picked;
  // Checks the attribute values (usage Error naming the bad one); absent: every
  // attribute is a 0/1 flag.
  std::function<void(const Workload&)> check_attrs = {};
  // Whether the workload carries an expression (Workload::expr, --expr): the elementwise
  // op's chain of vector ops, parsed by core/expression.h.
  bool takes_expr = false;
};

const std::vector<OpDef>& op_library();
const OpDef& find_op(const std::string& name);  // usage Error listing the known ops

// Builds the op's graph after checking the workload against the signature (rank of
// shape, positive sizes, known attrs); errors name the bad value.
TensorGraph build_graph(const Workload& w);

// Random inputs for the workload's graph, deterministic per seed.
std::vector<HostTensor> random_inputs(const TensorGraph& g, uint64_t seed);

// The default config: the op's hand_picked config clamped to the shape, then shrunk
// (halving tile sizes, analyze() as the judge) until feasible on this target when it
// is not. Implemented in core/default_config.cpp.
TileConfig default_config(const Workload& w, const TensorGraph& g, const Target& t);

}  // namespace pto
