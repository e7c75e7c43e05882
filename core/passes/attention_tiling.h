// Pass 3 (tile expansion) for flash_attention: its KV loop, the stages' tiles and the
// buffers of a cluster, with the capacity rules checked.
//
// A task owns up to q_tile of a KV head's stacked query rows (its G query heads, SQ rows
// each) and walks that head's KV blocks of kv_tile tokens: S = Q K^T on the Cube (stage
// c1), the online softmax on the vector units (v1), O_j = P V on the Cube (c2), and
// O = O * alpha + O_j on the vector units (v2); O / l at the end. Causal tasks skip the KV
// blocks their rows cannot see. With kv_split > 1 the KV blocks of a row block are shared
// by that many tasks, whose unnormalised O, running max and sum go to GM and a second
// kernel combines (FlashDecoding).
//
// The stage tiles mean what PyPTO's do, per stage: c1 and c2 are set_cube_tile_shapes
// for the two matmuls, whose L1 tiles are the blocks themselves (the Q block stays in L1
// for the whole loop; a K, V or P block is loaded whole), so their L0 sizes choose the
// sub-tiles (larger L1 sizes are clamped to the block); v1 and v2 are
// set_vec_tile_shapes for the two vector stages: rows of a slice, and the whole KV block
// (v1) or head dim (v2) per row. Each vector unit of a cluster owns an equal share of
// the task's rows, as the PTO kernel's sub-blocks do (pto-isa flash_atten: Vec_S0 =
// CUBE_S0 / 2 on A2/A3).
//
// Capacities are per unit: L1, L0A, L0B, L0C on the Cube (a unit's pipelined buffers
// have nbuffer slots, a Cube-vector hand-off preload + 1 where it lands), UB on each
// vector unit.
#pragma once

#include "core/passes/pipeline_ir.h"
#include "core/passes/tile_rules.h"

namespace pto::passes {

// The tiling of `spec` under the config, every broken rule reported to `check`.
AttentionTiling tile_attention(const AttentionSpec& spec, const ResolvedConfig& rc, const Target& target,
                               RuleCheck& check);

// The KV blocks a task of rows [row0, row0 + rows) of a head's stacked rows computes:
// all of them, or with the causal mask those some row can see.
int64_t needed_kv_blocks(const AttentionSpec& spec, int64_t kv_tile, int64_t kv_blocks, int64_t row0, int64_t rows);

// With splits > 1: the partials' GM tensors (appended to plan.extra_tensors, numbered
// after the partition's `tensor_count` tensors) and the kernel that combines them into
// the output, run after the attention kernel `attention_kernel`.
TiledKernel split_combine_kernel(const AttentionSpec& spec, AttentionTiling& tiling, int attention_kernel,
                                 size_t tensor_count, const std::vector<GmTensor>& tensors, TilePlan& plan,
                                 const Target& target, RuleCheck& check);

// The fallbacks of a bare compile() without an `attention` key or stage tiles: the PTO
// kernel's published blocks (q_tile 128, kv_tile 256).
AttentionTiles fallback_attention();
StageTiles fallback_stage(const std::string& stage);

}  // namespace pto::passes
