// The cost model's version: bump it when predictions change for the same (graph,
// config, target, coefficients). Tuning records carry it (search/tuning_record.h), so a
// record ranked by an older model is reported as stale rather than served as fresh.
#pragma once

namespace pto {

// 0.4.10: flash_attention's Cube-vector flags: the target's flag latency in the first
// block's hand-off chain, two flags a block without a QK preload, and with one the round
// trip of S, P and O_j that P blocks must cover;
// 0.4.9: each kernel's n-buffer depth from the summary (the compiler picks it when the
// config gives none), no longer the config's; atomic read-backs only for int32 split-K;
// 0.4.8: the NPU model's flash_attention (MIX) kernel: tasks spread as dispatched, the
// first block's hand-off chain per task, one buffer overlapping each side's loads;
// 0.4.7: on an AVX-512 host, packing twice as fast and a vector row loop's call at 4
// cycles, as runtime_steps_bench measured them on the AVX-512 machine (AVX2 unchanged);
// 0.4.6: the host model's exp / log / tanh and erf / erfc rows at 17 and 75 cycles an
// element, their prices with the outputs' copy-out no longer in the measured runs; its
// vector passes stream the UB bytes a task addresses, not the further slots' too, and
// cost half a cycle an element, streaming from the LLC at 24 and DRAM at 7 B/cycle;
// 0.4.5: the host model's register blocks and AVX2 FMA rate at the runtime's measured
// prices; packing at 3.3 / 3.7 B/cycle (A / B), 2.5 past the core's L2 (was 1), and
// from DRAM past its LLC share;
// 0.4.4: the host model prices the steps the CPU runtime runs (no cube flags; a TMATMUL
// at its measured price) and a vector pass's stream only beyond its compute, past the
// core's LLC share;
// 0.4.3: the NPU model's vector tasks overlap as the simulator's UB buffers allow (one slot:
// the store beside the next load; n slots: compute waits for the store before it);
// 0.4.2: the host model's run start per row of a vector tile narrower than its rows;
// 0.4.1: the host model's graded cache tiers (0.3.1) and the NPU model's DMA bursts (0.4.0).
inline constexpr const char* kCostModelVersion = "0.4.10";

}  // namespace pto
