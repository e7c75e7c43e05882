#include "config.h"

#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "arguments.h"
#include "core/error.h"
#include "core/pypto_calls.h"
#include "core/pypto_module.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// PyPTO's cube setter arguments ([mL0,mL1], [kL0,kL1] or [kL0,kAL1,kBL1], [nL0,nL1]).
struct CubeTiles {
  CubeTile tile;
  std::vector<int64_t> m() const { return {tile.mL0, tile.mL1}; }
  std::vector<int64_t> k() const { return pypto_k(tile); }
  std::vector<int64_t> n() const { return {tile.nL0, tile.nL1}; }
};

// One stage's tiles: what a kernel sets before that stage's ops.
struct Stage {
  std::optional<CubeTiles> cube;
  std::optional<Shape> vec;
};

// The stages in kernel order, as a dict (Python keeps its insertion order).
py::dict stages_of(const TileConfig& tiles) {
  py::dict stages;
  for (const auto& [name, stage] : pypto_stages(tiles)) {
    std::optional<CubeTiles> cube;
    if (stage.cube) cube = CubeTiles{*stage.cube};
    stages[py::str(name)] = Stage{cube, stage.vec};
  }
  return stages;
}

// The module for a Config says where it came from; a dict or JSON text was given.
ModuleNote note_of(const py::handle& config) {
  if (!py::isinstance<Config>(config)) return {"given to pto_tune.emit_pypto", ""};
  const Config& c = config.cast<const Config&>();
  return {"pto_tune, config source '" + c.source + "'", c.stale ? "stale: " + c.stale_reason : ""};
}

std::string repr(const Config& c) {
  return "pto_tune.Config(" + c.tiles.to_string() + ", source='" + c.source + "'" +
         (c.stale ? ", stale" : "") + ")";
}

}  // namespace

TileConfig tiles_from(const py::handle& config) {
  if (py::isinstance<Config>(config)) return config.cast<const Config&>().tiles;
  if (py::isinstance<py::str>(config)) return TileConfig::parse(config.cast<std::string>());
  if (py::isinstance<py::dict>(config)) {
    return TileConfig::parse(json_text_of(config, "the config"));
  }
  usage_error("a config is a pto_tune.Config, a dict or JSON text, got a " +
              py::str(py::type::handle_of(config).attr("__name__")).cast<std::string>());
}

void bind_config(py::module_& m) {
  py::class_<CubeTiles>(m, "CubeTiles", "The cube tile: the arguments of pypto.set_cube_tile_shapes.")
      .def_property_readonly("m", &CubeTiles::m, "[mL0, mL1]")
      .def_property_readonly("k", &CubeTiles::k, "[kL0, kL1], or [kL0, kAL1, kBL1] when the L1 sizes differ")
      .def_property_readonly("n", &CubeTiles::n, "[nL0, nL1]")
      .def_property_readonly("split_k", [](const CubeTiles& c) { return c.tile.split_k; },
                             "whether K is split across cores (enable_split_k)")
      .def_property_readonly("k_view", [](const CubeTiles& c) { return c.tile.k_view; },
                             "the kernel's K loop: one matmul per K view of k_view elements (0: none)")
      .def("__repr__", [](const CubeTiles& c) {
        return "CubeTiles(m=" + py::repr(py::cast(c.m())).cast<std::string>() +
               ", k=" + py::repr(py::cast(c.k())).cast<std::string>() +
               ", n=" + py::repr(py::cast(c.n())).cast<std::string>() + (c.tile.split_k ? ", split_k=True" : "") +
               (c.tile.k_view > 0 ? ", k_view=" + std::to_string(c.tile.k_view) : "") + ")";
      });

  py::class_<Stage>(m, "Stage", "One stage's tiles: what a kernel sets before that stage's ops.")
      .def_readonly("cube", &Stage::cube, "The cube tile (.m, .k, .n: pypto.set_cube_tile_shapes), or None.")
      .def_readonly("vec", &Stage::vec, "The vec tile shape (pypto.set_vec_tile_shapes), or None.")
      .def("__repr__", [](const Stage& s) {
        return "Stage(cube=" + py::repr(py::cast(s.cube)).cast<std::string>() +
               ", vec=" + py::repr(py::cast(s.vec)).cast<std::string>() + ")";
      });

  py::class_<Config>(m, "Config",
                     "A tile config in PyPTO's vocabulary, with where it came from.\n\n"
                     "Config(json) makes one from JSON text or a dict in the canonical form\n"
                     "{\"vec\":[64,512], \"cube\":{\"m\":[128,128],\"k\":[64,256],\"n\":[256,256]}, ...}.")
      .def(py::init([](const py::object& json) {
             Config config;
             config.tiles = tiles_from(json);
             return config;
           }),
           py::arg("json"))
      .def_property_readonly(
          "vec", [](const Config& c) { return c.tiles.vec; },
          "The vec tile shape (the arguments of pypto.set_vec_tile_shapes), or None.")
      .def_property_readonly(
          "cube",
          [](const Config& c) -> std::optional<CubeTiles> {
            if (!c.tiles.cube) return std::nullopt;
            return CubeTiles{*c.tiles.cube};
          },
          "The cube tile (.m, .k, .n lists: pypto.set_cube_tile_shapes), or None.")
      .def_property_readonly(
          "stages", [](const Config& c) { return stages_of(c.tiles); },
          "The tile sets in kernel order, name -> Stage (.cube, .vec): flash_attention's c1, v1,\n"
          "c2, v2; any other op's one stage 'main'. What pto_tune.apply sets, stage by stage.")
      .def_property_readonly(
          "nbuffer", [](const Config& c) { return c.tiles.nbuffer; },
          "n-buffer depth, or None (1): flash_attention's L1/UB buffer depth (a kernel argument);\n"
          "for any other op pto-tune's own, PyPTO having no buffer-depth setter.")
      .def_property_readonly(
          "preload",
          [](const Config& c) -> std::optional<int> {
            if (!c.tiles.attention) return std::nullopt;
            return c.tiles.preload_or_default();
          },
          "flash_attention's QK preload: how many KV blocks its QK runs ahead of PV (a kernel\n"
          "argument; the config's attention.preload, else nbuffer - 1); None for other ops.")
      .def_property_readonly(
          "l2_group",
          [](const Config& c) -> std::optional<std::vector<int64_t>> {
            if (!c.tiles.l2_group) return std::nullopt;
            return std::vector<int64_t>{c.tiles.l2_group->first, c.tiles.l2_group->second};
          },
          "[mDim, nDim]: M x N tiles per wave of the core grid, or None (row-major).")
      .def_property_readonly(
          "fusion", [](const Config& c) { return c.tiles.fusion; },
          "Kernels as lists of graph node ids, or None (the compiler's partition).")
      .def_property_readonly(
          "source", [](const Config& c) { return c.source; },
          "Where it came from: 'exact', 'nearest <shape>', 'model', 'default', or 'given'.")
      .def_property_readonly(
          "stale", [](const Config& c) { return c.stale; },
          "True when the record was made by other compiler or cost-model versions.")
      .def_property_readonly(
          "stale_reason", [](const Config& c) { return c.stale_reason; }, "Why it is stale, or ''.")
      .def("to_json", [](const Config& c) { return c.tiles.to_string(); },
           "The config as canonical JSON text (what pto-tune --config takes).")
      .def("pypto_calls", [](const Config& c) { return pypto_snippet(c.tiles); },
           "The PyPTO lines to paste into a kernel: the setter calls, then comment lines\n"
           "for the choices PyPTO has no setter for.")
      .def("__eq__", [](const Config& a, const Config& b) { return a.tiles == b.tiles; })
      .def("__repr__", &repr);

  m.def(
      "emit_pypto",
      [](const std::string& op, const py::handle& shapes, const py::handle& config, const std::string& dtype,
         const std::string& target, const py::handle& attrs, const std::optional<std::string>& expr) {
        return pypto_module(workload_from(op, shapes, dtype, attrs, expr), target_named(target), tiles_from(config),
                            note_of(config));
      },
      py::arg("op"), py::arg("shapes"), py::arg("config"), py::arg("dtype") = "fp16",
      py::arg("target") = "ascend910b1", py::arg("attrs") = py::none(), py::arg("expr") = py::none(),
      "The PyPTO module of a config (a Config, a dict or JSON text) for a workload, as Python\n"
      "source: what `pto-tune tune/lookup --emit pypto` prints. Its TILES per stage, apply(pypto,\n"
      "stage=None), tiles_for(shape), JIT_OPTIONS and kernel(pypto, *tensors).");
}

}  // namespace pto::python
