#include "config.h"

#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/pypto_calls.h"

namespace py = pybind11;

namespace pto::python {

namespace {

// PyPTO's cube setter arguments ([mL0,mL1], [kL0,kL1] or [kL0,kAL1,kBL1], [nL0,nL1]).
struct CubeTiles {
  CubeTile tile;
  std::vector<int64_t> m() const { return {tile.mL0, tile.mL1}; }
  std::vector<int64_t> k() const {
    if (tile.kAL1 == tile.kBL1) return {tile.kL0, tile.kAL1};
    return {tile.kL0, tile.kAL1, tile.kBL1};
  }
  std::vector<int64_t> n() const { return {tile.nL0, tile.nL1}; }
};

std::string repr(const Config& c) {
  return "pto_tune.Config(" + c.tiles.to_string() + ", source='" + c.source + "'" +
         (c.stale ? ", stale" : "") + ")";
}

}  // namespace

TileConfig tiles_from(const py::handle& config) {
  if (py::isinstance<Config>(config)) return config.cast<const Config&>().tiles;
  if (py::isinstance<py::str>(config)) return TileConfig::parse(config.cast<std::string>());
  if (py::isinstance<py::dict>(config)) {
    std::string text = py::module_::import("json").attr("dumps")(config).cast<std::string>();
    return TileConfig::parse(text);
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
                             "whether K is split across cores")
      .def("__repr__", [](const CubeTiles& c) {
        return "CubeTiles(m=" + py::repr(py::cast(c.m())).cast<std::string>() +
               ", k=" + py::repr(py::cast(c.k())).cast<std::string>() +
               ", n=" + py::repr(py::cast(c.n())).cast<std::string>() + (c.tile.split_k ? ", split_k=True" : "") +
               ")";
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
          "nbuffer", [](const Config& c) { return c.tiles.nbuffer; }, "n-buffer depth, or None (1).")
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
}

}  // namespace pto::python
