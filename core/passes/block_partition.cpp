// Pass 4, block partition (see block_partition.h).
#include "core/passes/block_partition.h"

#include <functional>
#include <map>

#include "core/passes/codegen_attention.h"
#include "core/passes/codegen_cube.h"
#include "core/passes/codegen_stream.h"
#include "core/passes/codegen_vector.h"
#include "core/passes/execute_graph.h"

namespace pto::passes {
namespace {

// A Cube window's origin: the batch index, then (row, col).
Shape with_rows(Shape origin, int64_t row, int64_t col) {
  origin.push_back(row);
  origin.push_back(col);
  return origin;
}

std::string extent_name(const Shape& ext) {
  std::string out;
  for (size_t i = 0; i < ext.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(ext[i]);
  }
  return out;
}

// Row-major multi-index of `flat` in a grid of `counts`.
Shape unravel(int64_t flat, const Shape& counts) {
  Shape idx(counts.size(), 0);
  for (int d = static_cast<int>(counts.size()) - 1; d >= 0; --d) {
    idx[d] = flat % counts[d];
    flat /= counts[d];
  }
  return idx;
}

class BlockPartitioner {
 public:
  BlockPartitioner(const Partition& p, const ResolvedConfig& rc, Program& program)
      : p_(p), rc_(rc), prog_(program) {}

  void kernel(int index, const TiledKernel& tk) {
    Kernel k;
    k.id = index;
    k.name = tiled_kernel_name(p_, tk);
    if (tk.kind != KernelKind::Zero && tk.kind != KernelKind::Combine) k.nodes = p_.kernels[tk.spec].nodes;
    k.uses_cube = tk.kind == KernelKind::Cube || tk.kind == KernelKind::Attention;
    prog_.kernels.push_back(std::move(k));
    blocks_.clear();
    if (tk.kind == KernelKind::Cube) {
      cube_kernel(tk);
    } else if (tk.kind == KernelKind::Attention) {
      attention_kernel(tk);
    } else {
      vector_kernel(tk);
    }
  }

 private:
  Kernel& current() { return prog_.kernels.back(); }

  // The block of this (core, extents) in the current kernel, emitted on first use.
  int block(std::vector<int64_t> key, CoreType core, const std::string& name,
            const std::function<void(BlockProgram&)>& emit) {
    key.insert(key.begin(), static_cast<int64_t>(core));
    const auto it = blocks_.find(key);
    if (it != blocks_.end()) return it->second;
    BlockProgram b;
    b.id = static_cast<int>(prog_.blocks.size());
    b.name = name;
    b.core = core;
    emit(b);
    prog_.blocks.push_back(std::move(b));
    blocks_.emplace(std::move(key), prog_.blocks.back().id);
    return prog_.blocks.back().id;
  }

  int task(int block, CoreType core, std::vector<TensorBinding> bindings, Shape tile_index, std::vector<int> deps) {
    Task t;
    t.id = static_cast<int>(prog_.tasks.size());
    t.kernel = current().id;
    t.block = block;
    t.core = core;
    t.bindings = std::move(bindings);
    t.deps = std::move(deps);
    t.tile_index = std::move(tile_index);
    prog_.tasks.push_back(std::move(t));
    current().tasks.push_back(prog_.tasks.back().id);
    return prog_.tasks.back().id;
  }

  int vector_task(const TiledKernel& tk, const Shape& origin, const Shape& ext, Shape tile_index,
                  std::vector<int> deps) {
    const int b = block(ext, CoreType::AIV, current().name + ".aiv." + extent_name(ext), [&](BlockProgram& bp) {
      if (tk.vec.stream) return emit_stream_block(*tk.body, tk.vec, ext, tk.nbuffer, bp);
      emit_vector_block(*tk.body, tk.vec, ext, bp);
    });
    return task(b, CoreType::AIV, vector_bindings(*tk.body, origin, prog_.tensors), std::move(tile_index),
                std::move(deps));
  }

  void vector_kernel(const TiledKernel& tk) {
    const std::vector<DimSplit>& dims = tk.vec.dims;
    Shape counts(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) counts[d] = dims[d].count;
    const int64_t tiles = num_elements(counts);
    for (int64_t flat = 0; flat < tiles; ++flat) {
      const Shape idx = unravel(flat, counts);
      Shape origin(dims.size()), ext(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        origin[d] = idx[d] * dims[d].tile;
        ext[d] = dims[d].extent(idx[d]);
      }
      vector_task(tk, origin, ext, idx, {});
    }
  }

  void cube_kernel(const TiledKernel& tk) {
    const CubeSpec& s = *p_.kernels[tk.spec].cube;
    const CubeTiling& ct = tk.cube;
    const auto order = cube_tile_order(ct.m.count, ct.n.count, rc_.l2_group);
    for (int64_t b = 0; b < ct.batch; ++b) {
      const Shape batch_index = unravel(b, s.batch);
      for (const auto& [i, j] : order) {
        const int64_t m0 = i * ct.mL1, n0 = j * ct.nL1;
        const int64_t m = ct.m.extent(i), n = ct.n.extent(j);
        Shape tile_index = batch_index;
        tile_index.push_back(i);
        tile_index.push_back(j);
        int aic = -1;
        for (int64_t c = 0; c < ct.chunks; ++c) {
          const CubeTaskShape shape{m, n, ct.chunk_k(c, s.k), ct.chunks > 1 && ct.partials < 0};
          std::string name = current().name + ".aic." + std::to_string(m) + "x" + std::to_string(n);
          if (ct.chunks > 1) name += ".k" + std::to_string(shape.k);
          const int blk = block({m, n, shape.k}, CoreType::AIC, name, [&](BlockProgram& bp) {
            emit_cube_block(s, ct, shape, prog_.tensors, bp);
          });
          Shape index = tile_index;
          if (ct.chunks > 1) index.push_back(c);
          std::vector<TensorBinding> bindings = cube_bindings(s, batch_index, m0, n0, c * ct.chunk_steps * ct.k_step);
          if (ct.partials >= 0) bindings[2] = {ct.partials, with_rows(batch_index, c * s.m + m0, n0)};
          aic = task(blk, CoreType::AIC, std::move(bindings), std::move(index), {});
        }
        if (!tk.body->empty()) epilogue(tk, batch_index, tile_index, m0, n0, m, n, aic);
      }
    }
  }

  // One MIX task per (batch, KV head, row block, split); tasks with the same shape share a block.
  void attention_kernel(const TiledKernel& tk) {
    const AttentionSpec& s = *p_.kernels[tk.spec].attention;
    const AttentionTiling& a = *tk.attention;
    for (const AttentionTask& t : attention_tasks(s, a)) {
      std::vector<int64_t> key = attention_block_key(s, a, t);
      const int blk = block(key, CoreType::MIX,
                            current().name + ".mix." + std::to_string(t.rows) + "x" + std::to_string(t.blocks),
                            [&](BlockProgram& bp) { AttentionEmitter(s, a, t, bp).emit_all(); });
      Shape index = {t.batch, t.kv_head, t.row0 / a.row_blocks.tile};
      if (a.splits > 1) index.push_back(t.split);
      task(blk, CoreType::MIX, attention_bindings(s, a, t), std::move(index), {});
    }
  }

  // The AIV tasks over the vec sub-tiles of one Cube tile, each after its AIC task.
  void epilogue(const TiledKernel& tk, const Shape& batch_index, const Shape& tile_index, int64_t m0, int64_t n0,
                int64_t m, int64_t n, int aic) {
    const Shape& vt = tk.vec.tile;
    const size_t r = vt.size();
    const DimSplit rows = split_dim(m, vt[r - 2]), cols = split_dim(n, vt[r - 1]);
    for (int64_t si = 0; si < rows.count; ++si)
      for (int64_t sj = 0; sj < cols.count; ++sj) {
        Shape origin = batch_index, ext(r - 2, 1);
        origin.push_back(m0 + si * rows.tile);
        origin.push_back(n0 + sj * cols.tile);
        ext.push_back(rows.extent(si));
        ext.push_back(cols.extent(sj));
        Shape index = tile_index;
        index.push_back(si);
        index.push_back(sj);
        vector_task(tk, origin, ext, std::move(index), {aic});
      }
  }

  const Partition& p_;
  const ResolvedConfig& rc_;
  Program& prog_;
  std::map<std::vector<int64_t>, int> blocks_;  // (core, extents...) -> block, per kernel
};

}  // namespace

std::string tiled_kernel_name(const Partition& p, const TiledKernel& k) {
  const KernelSpec& spec = p.kernels[k.spec];
  if (k.kind == KernelKind::Zero) return "zero." + p.tensors[spec.cube->c].name;
  if (k.kind == KernelKind::Combine) return "combine." + p.tensors[spec.attention ? spec.attention->out : spec.cube->c].name;
  return spec.name;
}

void partition_blocks(const Partition& p, const TilePlan& plan, const ResolvedConfig& config, Program& program) {
  BlockPartitioner bp(p, config, program);
  for (size_t i = 0; i < plan.kernels.size(); ++i) bp.kernel(static_cast<int>(i), plan.kernels[i]);
}

}  // namespace pto::passes
