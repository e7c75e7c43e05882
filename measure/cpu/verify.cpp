#include "measure/cpu/verify.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace pto::measure {

namespace {

int64_t accumulation_of(const TensorGraph& graph, const Node& node) {
  if (node.kind == OpKind::Matmul) {
    const Shape& a = graph.node(node.inputs.at(0)).shape;
    return node.transpose_a ? a[a.size() - 2] : a.back();
  }
  if (is_reduction(node.kind)) return graph.node(node.inputs.at(0)).shape.at(node.dim);
  return 1;
}

std::string describe(const Node& output, size_t index) {
  std::ostringstream text;
  text << "output " << index << " '" << output.name << "' " << dtype_name(output.dtype)
       << shape_str(output.shape);
  return text.str();
}

}  // namespace

int64_t accumulation_length(const TensorGraph& graph) {
  int64_t longest = 1;
  for (const Node& node : graph.nodes()) longest = std::max(longest, accumulation_of(graph, node));
  return longest;
}

Verification verify_outputs(const TensorGraph& graph, const std::vector<HostTensor>& actual,
                            const std::vector<HostTensor>& expected, int64_t accumulation) {
  Verification v;
  if (actual.size() != expected.size()) {
    v.passed = false;
    v.max_abs_err = INFINITY;
    v.mismatch = "the program produced " + std::to_string(actual.size()) +
                 " outputs, the reference " + std::to_string(expected.size());
    return v;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const Node& output = graph.node(graph.outputs().at(i));
    if (actual[i].shape() != expected[i].shape() || actual[i].dtype() != expected[i].dtype()) {
      v.passed = false;
      v.max_abs_err = INFINITY;
      v.mismatch = describe(output, i) + ": the program produced " + dtype_name(actual[i].dtype()) +
                   shape_str(actual[i].shape());
      return v;
    }
    double err = max_abs_diff(actual[i], expected[i]);
    v.max_abs_err = std::max(v.max_abs_err, std::isnan(err) ? INFINITY : err);
    if (v.passed && !all_close(actual[i], expected[i], accumulation)) {
      v.passed = false;
      std::ostringstream text;
      text << describe(output, i) << ": max |actual - expected| = " << err
           << " exceeds the tolerance (accumulation length " << accumulation << ")";
      v.mismatch = text.str();
    }
  }
  return v;
}

}  // namespace pto::measure
