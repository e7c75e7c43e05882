// The PyPTO module's text: every op's module names its tensors and computes each graph node;
// fusion groups become sg_set_scope brackets that each open once, in the listed order, even
// when the graph's own order interleaves them; what PyPTO has no call for is a comment.
// tests/python/test_pypto_module.py executes the modules against a stand-in pypto.
#include "core/pypto_module.h"

#include <regex>

#include <gtest/gtest.h>

#include "core/op_library.h"
#include "tests/builtin_targets.h"
#include "tests/random_attrs.h"

namespace pto {
namespace {

Workload workload(const std::string& op, const Shape& shape) {
  Workload w;
  w.op = op;
  w.shape = shape;
  testing::set_example_expr(w);
  return w;
}

const Target& ascend() { return testing::npu(); }

std::string module_of(const Workload& w, const std::string& config) {
  return pypto_module(w, ascend(), TileConfig::parse(config), {"a test", ""});
}

std::vector<std::string> scope_calls(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex scope("sg_set_scope=(-?[0-9]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), scope); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST(PyptoModule, EveryOpsModuleDeclaresItsTensorsAndComputesEveryNode) {
  const std::map<std::string, Shape> shapes = {
      {"matmul", {64, 64, 64}}, {"batch_matmul", {2, 64, 64, 64}}, {"matmul_bias_gelu", {64, 64, 64}},
      {"attention", {1, 2, 64, 64}}, {"flash_attention", {1, 2, 128, 128, 64}}};
  for (const OpDef& op : op_library()) {
    const auto shape = shapes.find(op.name);
    const Workload w = workload(op.name, shape == shapes.end() ? Shape{32, 64} : shape->second);
    const TensorGraph g = build_graph(w);
    const std::string text = pypto_module(w, ascend(), default_config(w, g, ascend()), {"a test", ""});
    EXPECT_TRUE(text.starts_with("# PyPTO tiles for " + w.key() + " on ascend910b1")) << text;
    for (NodeId id : g.inputs()) EXPECT_NE(text.find("    \"" + g.node(id).name + "\": (["), std::string::npos) << text;
    if (op.name == "flash_attention") {
      EXPECT_NE(text.find("def kernel(pypto, q, k, v, *scales_and_out, tiles=TILES):"), std::string::npos) << text;
      EXPECT_NE(text.find("STAGES = (\"c1\", \"v1\", \"c2\", \"v2\")"), std::string::npos) << text;
      continue;
    }
    for (NodeId id : g.compute_nodes()) {
      const std::string& name = g.node(id).name;
      EXPECT_TRUE(text.find("    " + name + " = pypto.") != std::string::npos ||
                  text.find("    " + name + "[:] = ") != std::string::npos)
          << op.name << ": " << name << "\n" << text;
    }
  }
}

// matmul_bias_gelu: node 3 the matmul, 4 the bias cast, 5 the add, 6-10 gelu, 11 the cast.
TEST(PyptoModule, FusionGroupsAreScopesOpenedOnceInTheirOrder) {
  const Workload w = workload("matmul_bias_gelu", {64, 64, 64});
  const std::string text = module_of(w, R"({"cube":{"m":[64,64],"k":[64,64],"n":[64,64]},"vec":[16,64],
                                            "fusion":[[4],[3,5,6,7,8],[9,10,11]]})");
  EXPECT_EQ(scope_calls(text), (std::vector<std::string>{"1", "-1", "2", "-1", "3", "-1"})) << text;
  // The bias cast (group 1) runs before the matmul (group 2), though the graph lists it after.
  EXPECT_LT(text.find("bias_f32 = pypto.cast"), text.find("acc = pypto.matmul")) << text;
  EXPECT_TRUE(scope_calls(module_of(w, R"({"cube":{"m":[64,64],"k":[64,64],"n":[64,64]}})")).empty());
}

TEST(PyptoModule, TheL2GroupingIsTheGuidesViewLoop) {
  const std::string text = module_of(workload("batch_matmul", {2, 300, 64, 500}),
                                     R"({"cube":{"m":[64,64],"k":[64,64],"n":[128,128]},"l2_group":[2,2]})");
  // m_view = mL1 x mDim, n_view = nL1 x nDim of the tiles the kernel is given.
  EXPECT_NE(text.find("m_view = min(tiles.main.cube.m[1] * 2, 300)"), std::string::npos) << text;
  EXPECT_NE(text.find("n_view = min(tiles.main.cube.n[1] * 2, 500)"), std::string::npos) << text;
  EXPECT_NE(text.find("for m_idx in pypto.loop(0, (300 + m_view - 1) // m_view, 1,"), std::string::npos) << text;
  // A is viewed along M (its rows), B along N (its columns); the last block holds the tail.
  EXPECT_NE(text.find("a_view = pypto.view(a, [2, m_view, 64], [0, m_idx * m_view, 0], "
                      "valid_shape=[2, pypto.min(m_view, 300 - m_idx * m_view), 64])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("b_view = pypto.view(b, [2, 64, n_view], [0, 0, n_idx * n_view], "
                      "valid_shape=[2, 64, pypto.min(n_view, 500 - n_idx * n_view)])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pypto.assemble(pypto.matmul(a_view, b_view, pypto.DT_FP16), [0, m_idx * m_view, n_idx * n_view], y)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"device_sched_mode\": 1"), std::string::npos) << text;
}

TEST(PyptoModule, WhatPyptoHasNoCallForIsAComment) {
  const std::string text = module_of(workload("softmax", {32, 64}), R"({"vec":[8,64],"nbuffer":2,"reduce":"passes"})");
  EXPECT_NE(text.find("\n# n-buffer depth 2: pto-tune only, PyPTO has no such setter"), std::string::npos) << text;
  EXPECT_NE(text.find("\n# reduce passes: pto-tune only"), std::string::npos) << text;
  EXPECT_EQ(text.find("nbuffer="), std::string::npos) << text;
}

TEST(PyptoModule, ScalarsAreWrittenAsPythonReadsThemBack) {
  const std::string text = module_of(workload("gelu", {32, 64}), R"({"vec":[8,64]})");
  EXPECT_NE(text.find("pypto.mul(x_f32, 0.7071067811865475)"), std::string::npos) << text;
  EXPECT_NE(text.find("pypto.add(erf, 1.0)"), std::string::npos) << text;
}

}  // namespace
}  // namespace pto
