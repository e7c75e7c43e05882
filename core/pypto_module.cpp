// The PyPTO module (core/pypto_module.h). Map: the Python literals first, then the
// module's parts top to bottom (header, docstring, tile classes, TILES, tiles_for and
// apply, JIT_OPTIONS, TENSORS), then KernelWriter, which walks the op's Tensor Graph and writes each node
// as the PyPTO call that computes it, with the fusion scopes and the L2 view loops.
#include "core/pypto_module.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "core/analyze.h"
#include "core/error.h"
#include "core/op_library.h"
#include "core/pypto_calls.h"

namespace pto {
namespace {

// ---- Python literals ---------------------------------------------------------------------

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<std::string> texts(const std::vector<int64_t>& values) {
  std::vector<std::string> out;
  for (int64_t v : values) out.push_back(std::to_string(v));
  return out;
}

// Appended rather than "[" + ...: GCC 12 warns falsely (-Wrestrict) on a literal plus a temporary.
std::string enclosed(const char* open, const std::string& items, const char* close) {
  return std::string(open).append(items).append(close);
}

std::string py_list(const std::vector<std::string>& items) { return enclosed("[", joined(items), "]"); }
std::string py_tuple(const std::vector<int64_t>& values) {
  return enclosed("(", joined(texts(values)), values.size() == 1 ? ",)" : ")");
}

// The shortest decimal that reads back as the same double, as Python's repr writes it.
std::string py_float(double v) {
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  std::string out = text;
  return out.find_first_of(".e") == std::string::npos ? out + ".0" : out;
}

// PyPTO's name of an element type (python/pypto/enum.py), "DT_FP16".
std::string dtype_attribute(DType t) {
  switch (t) {
    case DType::F32: return "DT_FP32";
    case DType::F16: return "DT_FP16";
    case DType::BF16: return "DT_BF16";
    case DType::I32: return "DT_INT32";
    case DType::I8: return "DT_INT8";
    case DType::Bool: return "DT_BOOL";
  }
  internal_error("pypto_module: unknown dtype");
}

std::string dtype_constant(DType t) { return "pypto." + dtype_attribute(t); }

std::string cube_literal(const CubeTile& c) {
  return "CubeTiles(m=" + py_tuple({c.mL0, c.mL1}) + ", k=" + py_tuple(pypto_k(c)) + ", n=" +
         py_tuple({c.nL0, c.nL1}) + ", split_k=" + (c.split_k ? "True" : "False") +
         (c.k_view > 0 ? ", k_view=" + std::to_string(c.k_view) : "") + ")";
}

std::string stage_literal(const StageTiles& s) {
  std::vector<std::string> fields;
  if (s.cube) fields.push_back("cube=" + cube_literal(*s.cube));
  if (s.vec) fields.push_back("vec=" + py_tuple(*s.vec));
  return "StageTiles(" + joined(fields) + ")";
}

// ---- The module's parts ------------------------------------------------------------------

// What the config holds that is not a PyPTO call in this module: pto-tune's own choices.
std::vector<std::string> not_pypto_lines(const TileConfig& config) {
  std::vector<std::string> lines;
  if (config.nbuffer && !config.attention) lines.push_back(pypto_nbuffer_note(config));
  if (config.reduce)
    lines.push_back(std::string("reduce ") + reduce_form_name(*config.reduce) +
                    ": pto-tune only, how its compiler runs a split reduction; PyPTO has no such setter");
  return lines;
}

std::string header(const Workload& w, const Target& t, const TileConfig& config, const ModuleNote& note) {
  std::string out = "# PyPTO tiles for " + w.key() + " on " + t.name + " (target fingerprint " + t.fingerprint() +
                    "),\n# written by pto-tune " PTO_TUNE_VERSION " --emit pypto.\n" +
                    "# config: " + config.to_string() + "\n# from: " + note.source + "\n";
  if (!note.caveat.empty()) out += "# " + note.caveat + "\n";
  for (const std::string& line : not_pypto_lines(config)) out += "# " + line + "\n";
  return out;
}

// The kernel's tensor arguments: the graph's inputs, then its outputs.
struct Signature {
  std::vector<std::string> names;
  std::vector<const Node*> nodes;

  // "a: pypto.Tensor([512, 256], pypto.DT_FP16)", as a JIT function declares it.
  std::string declaration(size_t i) const {
    return names[i] + ": pypto.Tensor(" + py_list(texts(nodes[i]->shape)) + ", " + dtype_constant(nodes[i]->dtype) + ")";
  }
};

std::string tensors_constant(const Signature& sig) {
  std::string out = "\n# The kernel's tensors, inputs then outputs: name -> (shape, element type of pypto).\nTENSORS = {\n";
  for (size_t i = 0; i < sig.names.size(); ++i)
    out += "    \"" + sig.names[i] + "\": (" + py_list(texts(sig.nodes[i]->shape)) + ", \"" +
           dtype_attribute(sig.nodes[i]->dtype) + "\"),\n";
  return out + "}\n";
}

std::string docstring(const Workload& w, const Signature& sig) {
  std::string out = "\"\"\"PyPTO tiles for " + w.key() + ", written by pto-tune.\n\n";
  out += "Run it inside a PyPTO JIT function:\n\n    import pypto\n    import <this module> as tuned\n\n"
         "    @pypto.frontend.jit(**tuned.JIT_OPTIONS)\n    def " + w.op + "_kernel(\n";
  for (size_t i = 0; i < sig.names.size(); ++i) out += "        " + sig.declaration(i) + ",\n";
  return out + "    ):\n        tuned.kernel(pypto, " + joined(sig.names) + ")\n\"\"\"\n";
}

constexpr const char* kTileClasses = R"(
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class CubeTiles:
    """pypto.set_cube_tile_shapes(m, k, n, enable_split_k): m and n are [L0, L1], k is
    [kL0, kL1] or [kL0, kAL1, kBL1]."""

    m: Tuple[int, int]
    k: Tuple[int, ...]
    n: Tuple[int, int]
    split_k: bool = False
    k_view: int = 0  # the kernel's K loop: one matmul per K view of k_view (0: none)


@dataclass(frozen=True)
class StageTiles:
    """What a kernel sets before one stage's ops."""

    cube: Optional[CubeTiles] = None
    vec: Optional[Tuple[int, ...]] = None

)";

// flash_attention's loop tiles: the fields the Tiles class adds after its stages.
std::vector<std::pair<std::string, std::string>> loop_fields(const TileConfig& config) {
  if (!config.attention) return {};
  const AttentionTiles& a = *config.attention;
  return {{"q_tile", std::to_string(a.q_tile)},
          {"kv_tile", std::to_string(a.kv_tile)},
          {"kv_split", std::to_string(a.kv_split)},
          {"order", "\"" + std::string(task_order_name(a.order)) + "\""},
          {"nbuffer", std::to_string(config.nbuffer_or_default())},
          {"preload", std::to_string(config.preload_or_default())}};
}

// The Tiles fields: the stage names of the config and of every bucket's, in kernel
// order (a bucket whose config lacks a stage gets an empty StageTiles there).
std::vector<std::string> stage_names(const TileConfig& config, const ShapeBuckets& buckets) {
  TileConfig every;  // only its stage names and whether some config has the op's one stage matter
  auto add = [&every](const TileConfig& c) {
    for (const auto& [name, tiles] : c.stages) every.stages[name];
    if (c.cube || c.vec) every.vec = Shape{1};
  };
  add(config);
  for (const ShapeBuckets::Bucket& b : buckets.buckets) add(b.config);
  std::vector<std::string> names;
  for (const auto& [name, tiles] : pypto_stages(every)) names.push_back(name);
  return names;
}

std::string tiles_class(const Workload& w, const TileConfig& config, const std::vector<std::string>& stages) {
  std::string out = "\n@dataclass(frozen=True)\nclass Tiles:\n    \"\"\"The tile sets of " + w.op +
                    ", one field per stage in kernel order (STAGES)";
  out += config.attention ? ", then the kernel loop's tiles:\n    non-tensor kernel arguments, part of PyPTO's JIT "
                            "cache key; nbuffer is its L1 and UB buffer depth, preload how many KV blocks\n    its QK runs ahead of "
                            "PV (the Cube-vector FIFOs hold preload + 1).\"\"\"\n\n"
                          : ".\"\"\"\n\n";
  for (const std::string& name : stages) out += "    " + name + ": StageTiles\n";
  for (const auto& [name, value] : loop_fields(config)) out += "    " + name + ": " + (name == "order" ? "str" : "int") + "\n";
  if (stages.empty() && !config.attention) out += "    pass\n";
  return out;
}

// `Tiles(...)` of one config, each field on its own line after `indent`.
std::string tiles_literal(const std::vector<std::string>& stages, const TileConfig& config, const std::string& indent) {
  std::map<std::string, StageTiles> own;
  for (const auto& [name, tiles] : pypto_stages(config)) own[name] = tiles;
  std::string out = "Tiles(\n";
  for (const std::string& name : stages) out += indent + "    " + name + "=" + stage_literal(own[name]) + ",\n";
  for (const auto& [name, value] : loop_fields(config)) out += indent + "    " + name + "=" + value + ",\n";
  return out + indent + ")";
}

std::string tiles_instance(const Workload& w, const TileConfig& config, const std::vector<std::string>& stages) {
  std::vector<std::string> names;
  for (const std::string& name : stages) names.push_back("\"" + name + "\"");
  return "\n\nTILES = " + tiles_literal(stages, config, "") + "\nSTAGES = (" + joined(names) +
         (names.size() == 1 ? ",)" : ")") + "\nTUNED_SHAPE = " + py_tuple(w.shape) + "\n";
}

// A module for a dynamic dim (pypto.DYNAMIC): a Tiles per bucket of that dim's size.
std::string buckets_constant(const ShapeBuckets& buckets, const std::vector<std::string>& stages) {
  if (buckets.buckets.empty()) return "";
  std::string out = "\n# " + buckets.dim_name + " (dim " + std::to_string(buckets.dim) +
                    ") is dynamic (pypto.DYNAMIC): each bucket's tiles serve the sizes up to its bound,\n"
                    "# from the bound before it; sizes past the last take the last. kernel() is written for\n"
                    "# TUNED_SHAPE's config: a bucket's own fusion and l2_group are in its comment.\nDYNAMIC_DIM = " +
                    std::to_string(buckets.dim) + "\nBUCKETS = (\n";
  for (const ShapeBuckets::Bucket& b : buckets.buckets) {
    out += "    # " + buckets.dim_name + " <= " + std::to_string(b.upto) + ": " + b.config.to_string() + "\n";
    out += "    # from: " + b.source + "\n";
    out += "    (" + std::to_string(b.upto) + ", " + tiles_literal(stages, b.config, "    ") + "),\n";
  }
  return out + ")\n";
}

constexpr const char* kOneShapeTilesFor = R"(

def tiles_for(shape):
    """The tiles for a workload of `shape` (its dims, as pto-tune's --shapes gives them).

    Tuned for TUNED_SHAPE only, so every shape gets TILES; a module tuned for several
    shape buckets (pto-tune lookup --dynamic) picks the bucket here, behind the same
    signature.
    """
    return TILES
)";

constexpr const char* kBucketTilesFor = R"(

def tiles_for(shape):
    """The tiles for a workload of `shape` (its dims, as pto-tune's --shapes gives them):
    those of the first bucket whose bound holds shape[DYNAMIC_DIM]. A kernel with a
    pypto.DYNAMIC dim calls it, or receives its result as its tiling argument (a
    non-tensor argument: part of PyPTO's JIT cache key, so each bucket compiles once).
    """
    for bound, tiles in BUCKETS:
        if shape[DYNAMIC_DIM] <= bound:
            return tiles
    return BUCKETS[-1][1]
)";

constexpr const char* kApply = R"(

def apply(pypto, stage=None, tiles=TILES):
    """Calls pypto's tile setters for one stage (a name in STAGES), or for every stage in
    kernel order: the calls pto_tune.apply(config, pypto, stage) makes."""
    if stage is not None and stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: the stages are {STAGES}")
    for name in STAGES if stage is None else (stage,):
        tile_set = getattr(tiles, name)
        cube = tile_set.cube
        if cube is not None:
            pypto.set_cube_tile_shapes(list(cube.m), list(cube.k), list(cube.n), enable_split_k=cube.split_k)
        if tile_set.vec is not None:
            pypto.set_vec_tile_shapes(*tile_set.vec)

)";

std::string jit_options(const TileConfig& config) {
  if (!config.l2_group) return "\n# Keyword arguments of @pypto.frontend.jit.\nJIT_OPTIONS = {}\n";
  return "\n# Keyword arguments of @pypto.frontend.jit: the L2 grouping's views pay off with L2-affine\n"
         "# scheduling, runtime_options device_sched_mode=1 (pypto-frontend-jit.md).\n"
         "JIT_OPTIONS = {\"runtime_options\": {\"device_sched_mode\": 1}}\n";
}

// The K loop's adds run on the tile pto-tune's compiler gives its Combine kernel (the
// partials' index dropped): PyPTO needs a vec tile before pypto.add, and this one is the
// program pto-tune measured. None where the config has no K loop or does not compile.
std::optional<Shape> k_loop_add_tile(const TensorGraph& g, const Target& t, const TileConfig& config) {
  if (!config.cube || config.cube->k_view == 0) return std::nullopt;
  const TilingSummary s = analyze(g, config, t);
  for (const KernelSummary& k : s.kernels) {
    if (!k.combine) continue;
    Shape tile = k.tile;
    tile.erase(tile.end() - 3);  // [batch..., chunks, M, N]: the chunks are the adds' operands
    return tile;
  }
  return std::nullopt;
}

std::string add_tile_constant(const std::optional<Shape>& tile) {
  if (!tile) return "";
  return "\n# The vec tile of the K loop's pypto.add calls: the tile pto-tune's compiler sums the partial\n"
         "# sums with (the guide sets it before the loop: set_vec_tile_shapes, 配置add切分大小).\n"
         "ADD_TILE = " + py_tuple(*tile) + "\n";
}

// flash_attention's kernel, as PyPTO's attention samples write it (models/deepseek_v4/
// win_attention_impl.py, models/deepseek_v32_exp/sparse_flash_attention_quant_impl.py):
// a pypto.loop over batch and heads, the Q and KV blocks unrolled at trace time (their
// extents, ragged tails and causal bounds are Python ints), each stage's setters before
// its ops, the online softmax's running max and sum, and with kv_split > 1
// FlashDecoding's partials combined after. Generic over the config: it reads TILES.
std::string attention_constants(const Node& fa) {
  const bool quantized = fa.inputs.size() == 5;
  return std::string("\n# flash_attention: the causal mask (bottom-right aligned), the softmax scale, and an int8\n"
                     "# KV cache's tokens per fp32 scale (0: no int8 KV).\nCAUSAL = ") +
         (fa.causal ? "True" : "False") + "\nSCALE = " + py_float(*fa.scalar) +
         "\nKV_QUANT_BLOCK = " + std::to_string(quantized ? kKvQuantBlock : 0) + "\n";
}

constexpr const char* kAttentionKernel = R"(
# The running max starts at fp32's lowest finite value, not -inf: a row with no visible key
# in a KV split then gets p = exp(-inf - lowest) = 0 instead of exp(-inf + inf) = NaN.
LOWEST = -3.4028234663852886e38


def _blocks(extent, tile):
    return (extent + tile - 1) // tile


def _tasks(pypto, batch, heads, q_blocks, order):
    """(batch, head, Q block) in the config's order: bhq row-major, qbh Q blocks outermost,
    heavy_first the Q blocks with the most KV blocks (the last, when causal) first."""
    q_order = range(q_blocks - 1, -1, -1) if order == "heavy_first" else range(q_blocks)
    if order == "bhq":
        for b in pypto.loop(batch, name="LOOP_B", idx_name="b_idx"):
            for h in pypto.loop(heads, name="LOOP_H", idx_name="h_idx"):
                for qi in q_order:
                    yield b, h, qi
        return
    for qi in q_order:
        for b in pypto.loop(batch, name="LOOP_B", idx_name="b_idx"):
            for h in pypto.loop(heads, name="LOOP_H", idx_name="h_idx"):
                yield b, h, qi


def _kv_block(pypto, x, scale, b, kv_head, start, rows, dtype):
    """Rows [start, start + rows) of K or V for one KV head; int8 dequantized in the vector
    unit, each KV_QUANT_BLOCK tokens times their fp32 scale."""
    d = TENSORS["k"][0][3]
    block = pypto.view(x, [1, 1, rows, d], [b, kv_head, start, 0])
    if scale is None:
        return block
    out = pypto.tensor([1, 1, rows, d], dtype, "kv_dequant")
    for t in range(0, rows, KV_QUANT_BLOCK):
        n = min(KV_QUANT_BLOCK, rows - t)
        part = pypto.view(block, [1, 1, n, d], [0, 0, t, 0])
        s = pypto.view(scale, [1, 1, 1], [b, kv_head, (start + t) // KV_QUANT_BLOCK])
        pypto.assemble(pypto.cast(pypto.mul(pypto.cast(part, pypto.DT_FP32), s), dtype), [0, 0, t, 0], out)
    return out


def _attend(pypto, q_block, kv, b, kv_head, row0, blocks, tiles):
    """The online softmax over `blocks` (KV block numbers): the running max m and sum l,
    the output o rescaled per block. Returns the unnormalised (o, m, l)."""
    (k, v, k_scale, v_scale), (_, _, sq, d), skv = kv, TENSORS["q"][0], TENSORS["k"][0][2]
    rows, dtype = q_block.shape[2], q_block.dtype
    m = pypto.full([1, 1, rows, 1], LOWEST, pypto.DT_FP32)
    l = pypto.full([1, 1, rows, 1], 0.0, pypto.DT_FP32)
    o = pypto.full([1, 1, rows, d], 0.0, pypto.DT_FP32)
    for j in blocks:
        col0 = j * tiles.kv_tile
        cols = min(tiles.kv_tile, skv - col0)
        apply(pypto, "c1", tiles)
        k_block = _kv_block(pypto, k, k_scale, b, kv_head, col0, cols, dtype)
        s = pypto.mul(pypto.matmul(q_block, k_block, pypto.DT_FP32, b_trans=True), SCALE)
        diagonal = row0 + skv - sq - col0 + 1
        if CAUSAL and diagonal < cols:  # the block crosses the diagonal: -inf above it
            s = pypto.add(s, pypto.triu(pypto.full([rows, cols], float("-inf"), pypto.DT_FP32), diagonal))
        apply(pypto, "v1", tiles)
        m_new = pypto.maximum(m, pypto.amax(s, -1, keepdim=True))
        p = pypto.exp(pypto.sub(s, m_new))
        correction = pypto.exp(pypto.sub(m, m_new))
        l = pypto.add(pypto.mul(l, correction), pypto.sum(p, -1, keepdim=True))
        apply(pypto, "c2", tiles)
        v_block = _kv_block(pypto, v, v_scale, b, kv_head, col0, cols, dtype)
        o_block = pypto.matmul(pypto.cast(p, dtype), v_block, pypto.DT_FP32)
        apply(pypto, "v2", tiles)
        o = pypto.add(pypto.mul(o, correction), o_block)
        m = m_new
    return o, m, l


def _combine(pypto, partials, out, tiles):
    """FlashDecoding's combine of the KV splits: with m = max_s m_s and w_s = exp(m_s - m),
    out = sum_s w_s o_s / sum_s w_s l_s."""
    (batch, heads, sq, d), (o_parts, m_parts, l_parts) = TENSORS["q"][0], partials
    apply(pypto, "v2", tiles)
    for b in pypto.loop(batch, name="LOOP_COMBINE_B", idx_name="b_idx"):
        for h in pypto.loop(heads, name="LOOP_COMBINE_H", idx_name="h_idx"):
            for qi in range(_blocks(sq, tiles.q_tile)):
                row0 = qi * tiles.q_tile
                rows = min(tiles.q_tile, sq - row0)
                split = [[pypto.view(x, [1, 1, rows, n], [b, h, s * sq + row0, 0])
                          for x, n in ((o_parts, d), (m_parts, 1), (l_parts, 1))] for s in range(tiles.kv_split)]
                m = split[0][1]
                for _, m_s, _ in split[1:]:
                    m = pypto.maximum(m, m_s)
                o = l = None
                for o_s, m_s, l_s in split:
                    w = pypto.exp(pypto.sub(m_s, m))
                    o = pypto.mul(o_s, w) if o is None else pypto.add(o, pypto.mul(o_s, w))
                    l = pypto.mul(l_s, w) if l is None else pypto.add(l, pypto.mul(l_s, w))
                pypto.assemble(pypto.cast(pypto.div(o, l), out.dtype), [b, h, row0, 0], out)


def kernel(pypto, q, k, v, *scales_and_out, tiles=TILES):
    """flash_attention with its tiles; the tensors as TENSORS declares them (k_scale and
    v_scale before out for an int8 KV cache)."""
    *scales, out = scales_and_out
    k_scale, v_scale = scales if scales else (None, None)
    batch, heads, sq, d = TENSORS["q"][0]
    kv_heads, skv = TENSORS["k"][0][1], TENSORS["k"][0][2]
    q_blocks, kv_blocks = _blocks(sq, tiles.q_tile), _blocks(skv, tiles.kv_tile)
    per_split = _blocks(kv_blocks, tiles.kv_split)
    partials = None
    if tiles.kv_split > 1:  # each split's unnormalised O, max and sum: FlashDecoding's partials
        partials = [pypto.tensor([batch, heads, tiles.kv_split * sq, n], pypto.DT_FP32, name)
                    for n, name in ((d, "o_partials"), (1, "max_partials"), (1, "sum_partials"))]
    for b, h, qi in _tasks(pypto, batch, heads, q_blocks, tiles.order):
        row0 = qi * tiles.q_tile
        rows = min(tiles.q_tile, sq - row0)
        q_block = pypto.view(q, [1, 1, rows, d], [b, h, row0, 0])
        # Causal: the KV blocks right of the last row's diagonal are fully masked, skipped.
        visible = min(kv_blocks, _blocks(row0 + rows + skv - sq, tiles.kv_tile)) if CAUSAL else kv_blocks
        for s in range(tiles.kv_split):
            blocks = range(s * per_split, min(visible, (s + 1) * per_split))
            o, m, l = _attend(pypto, q_block, (k, v, k_scale, v_scale), b, h // (heads // kv_heads), row0, blocks, tiles)
            if partials is None:
                pypto.assemble(pypto.cast(pypto.div(o, l), out.dtype), [b, h, row0, 0], out)
            else:
                for value, part in zip((o, m, l), partials):
                    pypto.assemble(value, [b, h, s * sq + row0, 0], part)
    if partials is not None:
        _combine(pypto, partials, out, tiles)
)";

// ---- The kernel ---------------------------------------------------------------------------

bool is_python_keyword(const std::string& s) {
  static const std::set<std::string> keywords = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
      "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
      "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};
  return keywords.count(s) > 0;
}

// Writes the op's Tensor Graph as a PyPTO kernel body, node by node in topological order.
class KernelWriter {
 public:
  KernelWriter(const TensorGraph& g, const TileConfig& config) : g_(g), config_(config) {
    reserved_ = {"pypto", "tiles", "m_view", "n_view", "m_idx", "n_idx", "k_view", "k_idx", "k_part", "k_parts", "k_sum", "ADD_TILE"};
    for (NodeId id : g.inputs()) name_node(id);
    for (NodeId id : g.outputs()) name_node(id);
    if (config.fusion)
      for (size_t i = 0; i < config.fusion->size(); ++i)
        for (int id : (*config.fusion)[i]) scope_of_[id] = static_cast<int>(i) + 1;
  }

  Signature signature() const {
    Signature sig;
    auto declare = [&](NodeId id) {
      sig.names.push_back(names_.at(id));
      sig.nodes.push_back(&g_.node(id));
    };
    for (NodeId id : g_.inputs()) declare(id);
    for (NodeId id : g_.outputs()) declare(id);
    return sig;
  }

  std::string write(const Workload& w, const std::vector<std::string>& stages) {
    const Signature sig = signature();
    line("def kernel(pypto, " + joined(sig.names) + ", tiles=TILES):");
    ++depth_;
    line("\"\"\"" + w.key() + " with its tiles; the tensors as TENSORS declares them.\"\"\"");
    for (const std::string& name : stages) line("apply(pypto, \"" + name + "\", tiles)");
    for (NodeId id : emission_order()) write_node(g_.node(id));
    enter_scope(-1);
    return "\n\n" + out_;
  }

 private:
  void line(const std::string& text) { out_ += std::string(4 * depth_, ' ') + text + "\n"; }

  // A Python name for the node: its own name made an identifier, unique in the kernel.
  const std::string& name_node(NodeId id) {
    std::string name;
    for (char c : g_.node(id).name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || is_python_keyword(name))
      name = std::string("t_").append(name);
    while (reserved_.count(name)) name.append("_").append(std::to_string(id));
    reserved_.insert(name);
    return names_[id] = name;
  }

  int scope_of(NodeId id) const {
    const auto group = scope_of_.find(id);
    return group == scope_of_.end() ? -1 : group->second;
  }

  // The nodes in an order that respects their inputs and keeps each fusion group's nodes
  // together, the groups in the order the config lists them: each scope opens once
  // (a group that is not convex opens again). Among ready nodes: the open scope's first,
  // then those of no scope, then the lowest scope; ties by id, the graph's own order.
  std::vector<NodeId> emission_order() const {
    std::set<NodeId> done(g_.inputs().begin(), g_.inputs().end());
    std::vector<NodeId> pending, order;
    for (const Node& n : g_.nodes())
      if (n.kind != OpKind::Input) pending.push_back(n.id);
    auto ready = [&](NodeId id) {
      const auto& inputs = g_.node(id).inputs;
      return std::all_of(inputs.begin(), inputs.end(), [&](NodeId in) { return done.count(in) > 0; });
    };
    int scope = -1;
    while (!pending.empty()) {
      auto key = [&](NodeId id) { return std::make_tuple(scope_of(id) != scope, std::max(scope_of(id), 0), id); };
      auto best = pending.end();
      for (auto it = pending.begin(); it != pending.end(); ++it)
        if (ready(*it) && (best == pending.end() || key(*it) < key(*best))) best = it;
      order.push_back(*best);
      done.insert(*best);
      scope = scope_of(*best);
      pending.erase(best);
    }
    return order;
  }

  bool is_output(NodeId id) const {
    return std::find(g_.outputs().begin(), g_.outputs().end(), id) != g_.outputs().end();
  }

  // A fusion group is a scope; nodes outside every group (and views) run with none.
  void enter_scope(int scope) {
    if (scope == scope_) return;
    if (scope_ != -1) line("pypto.set_pass_options(sg_set_scope=-1)");
    if (scope != -1) line("pypto.set_pass_options(sg_set_scope=" + std::to_string(scope) + ")");
    scope_ = scope;
  }

  void write_node(const Node& n) {
    enter_scope(scope_of(n.id));
    const std::string& name = is_output(n.id) ? names_.at(n.id) : name_node(n.id);
    const bool k_loop = config_.cube && config_.cube->k_view > 0;
    if (n.kind == OpKind::Matmul && config_.cube && (config_.l2_group || k_loop)) return write_split_matmul(n, name);
    assign(n, name, expression(n));
  }

  void assign(const Node& n, const std::string& name, const std::string& value) {
    line(is_output(n.id) ? name + "[:] = " + value : name + " = " + value);
  }

  std::string operand(const Node& n, size_t i) const { return names_.at(n.inputs.at(i)); }

  std::string expression(const Node& n) const {
    static const std::map<OpKind, std::string> calls = {
        {OpKind::Add, "add"},   {OpKind::Sub, "sub"},    {OpKind::Mul, "mul"},     {OpKind::Div, "div"},
        {OpKind::Max, "maximum"}, {OpKind::Min, "minimum"}, {OpKind::Exp, "exp"},   {OpKind::Log, "log"},
        {OpKind::Sqrt, "sqrt"}, {OpKind::Rsqrt, "rsqrt"}, {OpKind::Erf, "erf"},     {OpKind::Erfc, "erfc"},
        {OpKind::Tanh, "tanh"}, {OpKind::Neg, "neg"},    {OpKind::Abs, "abs"},     {OpKind::Sum, "sum"},
        {OpKind::Amax, "amax"}, {OpKind::Amin, "amin"}};
    const std::string x = n.inputs.empty() ? "" : operand(n, 0);
    if (n.kind == OpKind::Matmul) return matmul_call(n, x, operand(n, 1));
    if (n.kind == OpKind::Cast) return "pypto.cast(" + x + ", " + dtype_constant(n.dtype) + ")";
    if (n.kind == OpKind::CausalMask) return causal_mask(n, x);
    const auto call = calls.find(n.kind);
    if (call == calls.end())
      internal_error(std::string("pypto_module: no PyPTO form for a ") + op_kind_name(n.kind) + " node (\"" + n.name + "\")");
    const std::string f = "pypto." + call->second;
    if (is_reduction(n.kind))
      return f + "(" + x + ", " + std::to_string(n.dim) + ", keepdim=" + (n.keepdim ? "True" : "False") + ")";
    if (is_unary(n.kind)) return f + "(" + x + ")";
    if (!n.scalar) return f + "(" + x + ", " + operand(n, 1) + ")";
    // PyPTO's Tensor takes a scalar on its left through Python's reflected operators.
    if (n.scalar_first && (n.kind == OpKind::Sub || n.kind == OpKind::Div))
      return py_float(*n.scalar) + (n.kind == OpKind::Sub ? " - " : " / ") + x;
    return f + "(" + x + ", " + py_float(*n.scalar) + ")";
  }

  static std::string matmul_call(const Node& n, const std::string& a, const std::string& b) {
    return "pypto.matmul(" + a + ", " + b + ", " + dtype_constant(n.dtype) + (n.transpose_a ? ", a_trans=True" : "") +
           (n.transpose_b ? ", b_trans=True" : "") + ")";
  }

  // -inf above the bottom-right-aligned diagonal, added: the causal mask of tensor_graph.h.
  std::string causal_mask(const Node& n, const std::string& x) const {
    const int64_t rows = n.shape[n.shape.size() - 2], cols = n.shape.back();
    return "pypto.add(" + x + ", pypto.triu(pypto.full(" + py_list(texts({rows, cols})) + ", float(\"-inf\"), " +
           dtype_constant(n.dtype) + "), " + std::to_string(cols - rows + 1) + "))";
  }

  // A cut of one operand dim for a view: `axis`_view long from `axis`_idx * `axis`_view,
  // valid up to `extent`; `from_end` counts the dim from the operand's end.
  struct Cut {
    size_t from_end;
    std::string axis;
    int64_t extent;
  };

  // A matmul cut as the matmul guide cuts it (matmul_performance_guide.md): its manual K
  // loop (K轴分核, 手动构图方式), one matmul per K view, the fp32 partial sums added
  // after the loop, outside the matmul's scope (the adds are Vector ops); in each view,
  // or in the whole matmul, its L2 split ("增加L2命中率").
  void write_split_matmul(const Node& n, const std::string& name) {
    if (config_.cube->k_view == 0) return write_l2_blocks(n, name, false);
    const Node& a = g_.node(n.inputs[0]);
    const int64_t k = a.shape[a.shape.size() - (n.transpose_a ? 2 : 1)];
    line("# K loop (matmul_performance_guide.md, 手动构图方式): fp32 partial sums of K views, then added");
    line(std::string("k_view = tiles.") + kSingleStage + ".cube.k_view");
    line("k_parts = []");
    line("for k_idx in range((" + std::to_string(k) + " + k_view - 1) // k_view):");
    ++depth_;
    if (config_.l2_group) {
      line("k_part = pypto.tensor(" + py_list(texts(n.shape)) + ", " + dtype_constant(n.dtype) + ", \"k_part\")");
      write_l2_blocks(n, "k_part", true);
    } else {
      const std::string a_view = operand_view(n, 0, {k_cut(n, 0)});  // A's view first: its line comes first
      line("k_part = " + matmul_call(n, a_view, operand_view(n, 1, {k_cut(n, 1)})));
    }
    line("k_parts.append(k_part)");
    --depth_;
    enter_scope(-1);
    line("pypto.set_vec_tile_shapes(*ADD_TILE)");
    line("k_sum = k_parts[0]");
    line("for k_part in k_parts[1:]:");
    line("    k_sum = pypto.add(k_sum, k_part)");
    assign(n, name, "k_sum");
  }

  // Operand i's K dim cut into K views (k_view long from k_idx * k_view).
  Cut k_cut(const Node& n, size_t i) const {
    const bool transposed = i == 0 ? n.transpose_a : n.transpose_b;
    const size_t from_end = (i == 0) != transposed ? 1 : 2;  // A's K is its last dim, B's its second last
    const Node& src = g_.node(n.inputs[i]);
    return {from_end, "k", src.shape[src.shape.size() - from_end]};
  }

  // The L2 split: a pypto.loop over [m_view, n_view] blocks of the output, mDim x nDim
  // Cube tiles each, every block a matmul of an A row view and a B column view (of the
  // K view too, `in_k_loop`), assembled into `target`. The views follow the tiles the
  // kernel is given; a view past the shape's end holds what is left of it (valid_shape).
  void write_l2_blocks(const Node& n, const std::string& target, bool in_k_loop) {
    const auto [m_dim, n_dim] = *config_.l2_group;
    const size_t rank = n.shape.size();
    const int64_t m = n.shape[rank - 2], cols = n.shape[rank - 1];
    const std::string cube = std::string("tiles.") + kSingleStage + ".cube";
    line("# L2 grouping [" + std::to_string(m_dim) + ", " + std::to_string(n_dim) +
         "] (matmul_performance_guide.md): blocks of mDim x nDim Cube tiles");
    line("m_view = min(" + cube + ".m[1] * " + std::to_string(m_dim) + ", " + std::to_string(m) + ")");
    line("n_view = min(" + cube + ".n[1] * " + std::to_string(n_dim) + ", " + std::to_string(cols) + ")");
    if (!in_k_loop && !is_output(n.id))
      line(target + " = pypto.tensor(" + py_list(texts(n.shape)) + ", " + dtype_constant(n.dtype) + ", \"" + target +
           "\")");
    for (const auto& [axis, extent] : {std::pair<std::string, int64_t>{"m", m}, {"n", cols}}) {
      line("for " + axis + "_idx in pypto.loop(0, (" + std::to_string(extent) + " + " + axis + "_view - 1) // " + axis +
           "_view, 1, name=\"LOOP_L2_" + axis + "Idx_" + target + "\", idx_name=\"" + axis + "_idx\"):");
      ++depth_;
    }
    std::vector<Cut> a_cuts = {{n.transpose_a ? 1u : 2u, "m", m}}, b_cuts = {{n.transpose_b ? 2u : 1u, "n", cols}};
    if (in_k_loop) {
      a_cuts.push_back(k_cut(n, 0));
      b_cuts.push_back(k_cut(n, 1));
    }
    const std::string a_view = operand_view(n, 0, a_cuts);  // A's view first: its line comes first
    const std::string value = matmul_call(n, a_view, operand_view(n, 1, b_cuts));
    std::vector<std::string> offsets(rank - 2, "0");
    offsets.insert(offsets.end(), {"m_idx * m_view", "n_idx * n_view"});
    line("pypto.assemble(" + value + ", " + py_list(offsets) + ", " + target + ")");
    depth_ -= 2;
  }

  // Operand `i` of `n` with its `cuts` as a pypto.view (the operand itself with none).
  std::string operand_view(const Node& n, size_t i, const std::vector<Cut>& cuts) {
    if (cuts.empty()) return operand(n, i);
    const Node& src = g_.node(n.inputs[i]);
    std::vector<std::string> shape = texts(src.shape), offsets(src.shape.size(), "0"), valid = shape;
    for (const Cut& c : cuts) {
      const size_t dim = src.shape.size() - c.from_end;
      shape[dim] = c.axis + "_view";
      offsets[dim] = c.axis + "_idx * " + c.axis + "_view";
      valid[dim] = "pypto.min(" + c.axis + "_view, " + std::to_string(c.extent) + " - " + offsets[dim] + ")";
    }
    const std::string name = operand(n, i) + "_view";
    line(name + " = pypto.view(" + operand(n, i) + ", " + py_list(shape) + ", " + py_list(offsets) +
         ", valid_shape=" + py_list(valid) + ")");
    return name;
  }

  const TensorGraph& g_;
  const TileConfig& config_;
  std::map<NodeId, std::string> names_;
  std::set<std::string> reserved_;
  std::map<int, int> scope_of_;  // compute node -> its fusion group's scope id, from 1
  int scope_ = -1;
  int depth_ = 0;
  std::string out_;
};

}  // namespace

std::string pypto_module(const Workload& w, const Target& t, const TileConfig& config, const ModuleNote& provenance,
                         const ShapeBuckets& buckets) {
  const TensorGraph g = build_graph(w);
  const std::vector<std::string> stages = stage_names(config, buckets);
  KernelWriter kernel(g, config);
  const auto attention = std::find_if(g.nodes().begin(), g.nodes().end(),
                                      [](const Node& n) { return n.kind == OpKind::FlashAttention; });
  const std::string body = attention == g.nodes().end() ? kernel.write(w, stages)
                                                        : attention_constants(*attention) + kAttentionKernel;
  return header(w, t, config, provenance) + docstring(w, kernel.signature()) + kTileClasses +
         tiles_class(w, config, stages) + tiles_instance(w, config, stages) + buckets_constant(buckets, stages) +
         (buckets.buckets.empty() ? kOneShapeTilesFor : kBucketTilesFor) + kApply + jit_options(config) +
         tensors_constant(kernel.signature()) + add_tile_constant(k_loop_add_tile(g, t, config)) + body;
}

}  // namespace pto
