// pto_tune.Config: a tile config as Python reads it — PyPTO's setter arguments as
// lists (.vec, .cube.m/.k/.n, and per stage in kernel order .stages), the choices PyPTO
// has no setter for (.nbuffer, .l2_group, .fusion), where it came from (.source, .stale)
// and the text forms (.to_json(), .pypto_calls(), and emit_pypto(): the whole PyPTO
// module of core/pypto_module.h). Values are copied out on each access: a Config is
// immutable from Python.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "core/tile_config.h"

namespace pto::python {

struct Config {
  TileConfig tiles;
  std::string source = "given";  // "exact", "transfer 4096,4096,4096", "model", "default", "given"
  bool stale = false;            // made by other compiler or cost-model versions
  std::string stale_reason;
};

// A Config, a dict in the canonical JSON form, or JSON text, as a TileConfig; a
// UsageError naming the field for anything else.
TileConfig tiles_from(const pybind11::handle& config);

// Config, CubeTiles, Stage and emit_pypto().
void bind_config(pybind11::module_& m);

}  // namespace pto::python
