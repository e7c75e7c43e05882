// The PyPTO module for a tuned config: the Python 3 source a PyPTO user imports to run
// a workload with its tuned tiles, written by `pto-tune tune/lookup --emit pypto` and
// pto_tune.emit_pypto(). A pasted snippet (core/pypto_calls.h) says what to set; this
// module is the kernel that sets it, so that every config field reaches PyPTO as PyPTO
// spells it:
//
//   Tiles / TILES     a frozen dataclass of the tile sets per stage in kernel order, as
//                     PyPTO's models keep them (models/deepseek_v32_exp/
//                     sparse_flash_attention_quant_impl.py, SaTileShapeConfig: c1/v1/c2/v2);
//                     flash_attention adds its loop tiles, non-tensor kernel arguments
//   tiles_for(shape)  the tiles for a shape: TILES, or with a dynamic dim the tiles of
//                     its size's bucket (BUCKETS, DYNAMIC_DIM)
//   apply(pypto, stage=None)  the setter calls of one stage or all, in kernel order:
//                     pypto.set_cube_tile_shapes(m, k, n, enable_split_k=...) and
//                     pypto.set_vec_tile_shapes(*vec) (docs/zh/api/config/
//                     pypto-set_cube_tile_shapes.md, pypto-set_vec_tile_shapes.md,
//                     python/pypto/_controller.py)
//   JIT_OPTIONS       the keyword arguments of @pypto.frontend.jit: an l2_group asks for
//                     L2-affine scheduling, runtime_options device_sched_mode=1
//                     (docs/zh/api/config/pypto-frontend-jit.md)
//   TENSORS           the kernel's tensors: name -> (shape, PyPTO element type name)
//   kernel(pypto, *tensors, tiles=TILES)  the op's Tensor Graph written with PyPTO ops
//                     (python/pypto/op/*.py: matmul, add, exp, amax, sum, cast, ...), the
//                     setters first, each fusion group inside
//                     pypto.set_pass_options(sg_set_scope=g) ... (sg_set_scope=-1)
//                     (docs/zh/api/config/pypto-set_pass_options.md), and a matmul of an
//                     l2_group config as the guide's pypto.loop over m_view = mL1 x mDim,
//                     n_view = nL1 x nDim views (docs/zh/tutorials/debug/
//                     matmul_performance_guide.md, "增加L2命中率"), a K loop config's
//                     matmul as the guide's manual K loop (手动构图方式: a matmul per K
//                     view, partial sums added with pypto.add on ADD_TILE). flash_attention's kernel
//                     is one generic function over TILES, as PyPTO's attention samples
//                     write it: the block loops, apply per stage, the online softmax,
//                     FlashDecoding's combine for a KV split.
//
// What PyPTO has no call for (an op's nbuffer, the reduce form) is a comment in the
// header. tests/python/test_pypto_module.py runs every op's module against a stand-in
// pypto that checks PyPTO's documented rules.
#pragma once

#include <string>
#include <vector>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"

namespace pto {

// Where a module's config came from, for its header comment.
struct ModuleNote {
  std::string source;  // one line: "pto-tune tune, sim backend: 35.66 us simulated", "lookup: exact"
  std::string caveat;  // a line qualifying it ("stale: ..."), or empty
};

// A workload with a dynamic dim (PyPTO's pypto.DYNAMIC, e.g. the tokens of a decode
// matmul): the config per bucket of that dim's size, each bucket serving the sizes up to
// and including its bound. The module's BUCKETS and tiles_for(shape) come from them.
struct ShapeBuckets {
  struct Bucket {
    int64_t upto = 0;
    TileConfig config;
    std::string source;  // one line: where its config came from
  };
  int dim = -1;                  // index in the workload's shape
  std::string dim_name;          // the op's name for it ("M")
  std::vector<Bucket> buckets;   // by `upto`, ascending; empty: one tuned shape
};

// The module's source. Usage Error when the workload is not an op of the library.
std::string pypto_module(const Workload& w, const Target& t, const TileConfig& config, const ModuleNote& provenance,
                         const ShapeBuckets& buckets = {});

}  // namespace pto
