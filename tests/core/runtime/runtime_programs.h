// Hand-written programs and helpers shared by the CPU runtime tests of this folder:
// operand shorthands in the runtime tests' (offset, extent) order, random inputs, a
// one-call run, the tiled matmul program of a CubeCase (what the compiler would emit
// for a Cube kernel) and a single-tile elementwise program.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu_runtime.h"
#include "core/host_tensor.h"
#include "tests/program_builder.h"

namespace pto::testing {

inline Operand loc(MemLevel level, int id, Shape offset, Shape extent) {
  return local(level, id, std::move(extent), std::move(offset));
}
inline Operand ub(int id, Shape offset, Shape extent) { return loc(MemLevel::UB, id, std::move(offset), std::move(extent)); }
inline Shape zeros(size_t rank) { return Shape(rank, 0); }

inline HostTensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -1, double hi = 1) {
  return HostTensor::random(shape, dtype, seed, lo, hi);
}

inline std::vector<HostTensor> run_program(const Program& p, const std::vector<HostTensor>& inputs, int threads = 1) {
  CpuExecutor exec(p, ExecOptions{threads});
  return exec.run(inputs);
}

struct CubeCase {
  int64_t batch = 0;  // 0: rank-2 operands
  int64_t m = 1, n = 1, k = 1;
  int64_t mL0 = 16, mL1 = 16, nL0 = 16, nL1 = 16, kL0 = 16, kL1 = 16;
  bool ta = false, tb = false;
  DType in = DType::F32, out = DType::F32;
  int chunks = 1;           // split-K pieces (fp32 out)
  bool early_load = false;  // the next TLOAD sits between a step's TMOVs and its TMATMUL
  bool shared_l0c = false;  // one L0C [mL1, nL1] with windows instead of one per sub-tile
  int threads = 1;

  std::string str() const {
    std::ostringstream o;
    o << "b" << batch << " " << m << "x" << n << "x" << k << " L0 " << mL0 << "," << nL0 << "," << kL0 << " L1 "
      << mL1 << "," << nL1 << "," << kL1 << (ta ? " ta" : "") << (tb ? " tb" : "") << " " << dtype_name(in) << "->"
      << dtype_name(out) << " chunks " << chunks << (early_load ? " early" : "") << (shared_l0c ? " sharedC" : "")
      << " threads " << threads;
    return o.str();
  }
};

// Prepends the batch dim (index `b`, extent 1 in windows) when the case has one.
inline Shape batched(const CubeCase& c, Shape s, int64_t b_value) {
  if (c.batch) s.insert(s.begin(), b_value);
  return s;
}

// What the compiler would emit for a Cube kernel, written out directly: per output
// tile (and K chunk) one task; K steps of kL1 load A/B tiles into L1; L0 sub-tiles
// move to L0A/L0B and accumulate in L0C; L0C stores to GM (atomically with split-K,
// after a zero-fill kernel).
inline Program matmul_program(const CubeCase& c) {
  ProgramBuilder pb;
  const int64_t B = std::max<int64_t>(c.batch, 1);
  const int a = pb.tensor("a", batched(c, c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, c.batch), c.in, TensorRole::Input, 0);
  const int b = pb.tensor("b", batched(c, c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, c.batch), c.in, TensorRole::Input, 1);
  const int out = pb.tensor("c", batched(c, {c.m, c.n}, c.batch), c.out, TensorRole::Output, 0);
  const int64_t m_tiles = ceil_div(c.m, c.mL1), n_tiles = ceil_div(c.n, c.nL1);
  const int64_t steps_total = ceil_div(c.k, c.kL1);
  const int64_t steps_per_chunk = ceil_div(steps_total, c.chunks);

  std::vector<int> after;
  if (c.chunks > 1) {
    const int zero = pb.kernel("zero");
    after.push_back(zero);
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t mi = 0; mi < m_tiles; ++mi)
        for (int64_t ni = 0; ni < n_tiles; ++ni) {
          const int64_t mt = std::min(c.mL1, c.m - mi * c.mL1), nt = std::min(c.nL1, c.n - ni * c.nL1);
          pb.block("zero");
          const int z = pb.buffer("z.ub", MemLevel::UB, c.out, {c.mL1, c.nL1});
          pb.emit(Opcode::TFILL, ub(z, {0, 0}, {mt, nt})).scalar = 0.0;
          pb.emit(Opcode::TSTORE, gm(0, batched(c, {0, 0}, 0), batched(c, {mt, nt}, 1)), {ub(z, {0, 0}, {mt, nt})});
          pb.task(zero, {{out, batched(c, {mi * c.mL1, ni * c.nL1}, bi)}});
        }
  }
  const int cube = pb.kernel("mm", after, true);
  const int slots = c.early_load ? 1 : 2;
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t mi = 0; mi < m_tiles; ++mi)
      for (int64_t ni = 0; ni < n_tiles; ++ni)
        for (int chunk = 0; chunk < c.chunks; ++chunk) {
          const int64_t first_step = chunk * steps_per_chunk;
          const int64_t steps = std::min(steps_total, first_step + steps_per_chunk) - first_step;
          if (steps <= 0) continue;
          const int64_t k_begin = first_step * c.kL1;
          const int64_t k_end = std::min(c.k, (first_step + steps) * c.kL1);
          const int64_t m0 = mi * c.mL1, n0 = ni * c.nL1;
          const int64_t mt = std::min(c.mL1, c.m - m0), nt = std::min(c.nL1, c.n - n0);
          const int64_t msub = ceil_div(mt, c.mL0), nsub = ceil_div(nt, c.nL0);

          pb.block("mm", CoreType::AIC);
          std::vector<int> l1a, l1b;
          for (int s = 0; s < slots; ++s) {
            l1a.push_back(pb.buffer("a.l1", MemLevel::L1, c.in, {c.mL1, c.kL1}, Layout::FractalA));
            l1b.push_back(pb.buffer("b.l1", MemLevel::L1, c.in, {c.kL1, c.nL1}, Layout::FractalB));
          }
          const int l0a = pb.buffer("a.l0", MemLevel::L0A, c.in, {c.mL0, c.kL0});
          const int l0b = pb.buffer("b.l0", MemLevel::L0B, c.in, {c.kL0, c.nL0});
          std::vector<int> l0c;
          if (c.shared_l0c) {
            l0c.push_back(pb.buffer("c.l0", MemLevel::L0C, DType::F32, {c.mL1, c.nL1}));
          } else {
            for (int64_t i = 0; i < msub * nsub; ++i)
              l0c.push_back(pb.buffer("c.l0", MemLevel::L0C, DType::F32, {c.mL0, c.nL0}));
          }
          auto c_operand = [&](int64_t i, int64_t j, int64_t ms, int64_t ns) {
            if (c.shared_l0c) return loc(MemLevel::L0C, l0c[0], {i * c.mL0, j * c.nL0}, {ms, ns});
            return loc(MemLevel::L0C, l0c[i * nsub + j], {0, 0}, {ms, ns});
          };
          auto k_len = [&](int64_t s) { return std::min(c.kL1, k_end - (k_begin + s * c.kL1)); };
          auto load = [&](int64_t s) {
            const int64_t kk = s * c.kL1, kl = k_len(s);
            const int slot = static_cast<int>(s % slots);
            Instr& la = pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1a[slot], {0, 0}, {mt, kl}),
                                {gm(0, batched(c, c.ta ? Shape{kk, 0} : Shape{0, kk}, 0),
                                    batched(c, c.ta ? Shape{kl, mt} : Shape{mt, kl}, 1))});
            la.transpose = c.ta;
            Instr& lb = pb.emit(Opcode::TLOAD, loc(MemLevel::L1, l1b[slot], {0, 0}, {kl, nt}),
                                {gm(1, batched(c, c.tb ? Shape{0, kk} : Shape{kk, 0}, 0),
                                    batched(c, c.tb ? Shape{nt, kl} : Shape{kl, nt}, 1))});
            lb.transpose = c.tb;
            pb.flags(Pipe::MTE2, Pipe::MTE1);
          };
          // One sub-tile's TMOVs and TMATMUL; `between` runs after the TMOVs.
          auto compute = [&](int64_t s, const std::function<void()>& between) {
            const int slot = static_cast<int>(s % slots);
            const int64_t kl = k_len(s);
            for (int64_t i = 0; i < msub; ++i)
              for (int64_t j = 0; j < nsub; ++j)
                for (int64_t kk = 0; kk * c.kL0 < kl; ++kk) {
                  const int64_t ms = std::min(c.mL0, mt - i * c.mL0), ns = std::min(c.nL0, nt - j * c.nL0);
                  const int64_t ks = std::min(c.kL0, kl - kk * c.kL0);
                  pb.emit(Opcode::TMOV, loc(MemLevel::L0A, l0a, {0, 0}, {ms, ks}),
                          {loc(MemLevel::L1, l1a[slot], {i * c.mL0, kk * c.kL0}, {ms, ks})});
                  pb.emit(Opcode::TMOV, loc(MemLevel::L0B, l0b, {0, 0}, {ks, ns}),
                          {loc(MemLevel::L1, l1b[slot], {kk * c.kL0, j * c.nL0}, {ks, ns})});
                  if (between) between();
                  pb.flags(Pipe::MTE1, Pipe::M);
                  pb.emit(Opcode::TMATMUL, c_operand(i, j, ms, ns),
                          {loc(MemLevel::L0A, l0a, {0, 0}, {ms, ks}), loc(MemLevel::L0B, l0b, {0, 0}, {ks, ns})})
                      .accumulate = !(s == 0 && kk == 0);
                }
          };
          if (c.early_load) {
            load(0);
            for (int64_t s = 0; s < steps; ++s)
              compute(s, [&, s] {
                if (s + 1 < steps) load(s + 1);
              });
          } else {
            for (int64_t s = 0; s < steps; ++s) {
              load(s);
              compute(s, nullptr);
            }
          }
          pb.flags(Pipe::M, Pipe::FIX);
          for (int64_t i = 0; i < msub; ++i)
            for (int64_t j = 0; j < nsub; ++j) {
              const int64_t ms = std::min(c.mL0, mt - i * c.mL0), ns = std::min(c.nL0, nt - j * c.nL0);
              pb.emit(Opcode::TSTORE, gm(2, batched(c, {i * c.mL0, j * c.nL0}, 0), batched(c, {ms, ns}, 1)),
                      {c_operand(i, j, ms, ns)})
                  .accumulate = c.chunks > 1;
            }
          pb.task(cube, {{a, batched(c, c.ta ? Shape{k_begin, m0} : Shape{m0, k_begin}, bi)},
                         {b, batched(c, c.tb ? Shape{n0, k_begin} : Shape{k_begin, n0}, bi)},
                         {out, batched(c, {m0, n0}, bi)}});
        }
  return pb.p;
}

// A single-tile program: out = op(x[, y]) with everything in one UB tile.
inline Program unary_or_binary_program(OpKind op, const Shape& shape, DType dtype, std::optional<double> scalar,
                                bool scalar_first, const Shape& y_shape) {
  ProgramBuilder pb;
  const bool binary = is_binary(op) && !scalar;
  const int x = pb.tensor("x", shape, dtype, TensorRole::Input, 0);
  const int y = binary ? pb.tensor("y", y_shape, dtype, TensorRole::Input, 1) : -1;
  const int out = pb.tensor("out", shape, dtype, TensorRole::Output, 0);
  const int k = pb.kernel("op");
  pb.block("op");
  const int ux = pb.buffer("x.ub", MemLevel::UB, dtype, shape);
  const int uy = binary ? pb.buffer("y.ub", MemLevel::UB, dtype, y_shape) : -1;
  const int uo = pb.buffer("o.ub", MemLevel::UB, dtype, shape);
  pb.emit(Opcode::TLOAD, ub(ux, zeros(shape.size()), shape), {gm(0, zeros(shape.size()), shape)});
  std::vector<Operand> src{ub(ux, zeros(shape.size()), shape)};
  if (binary) {
    pb.emit(Opcode::TLOAD, ub(uy, zeros(y_shape.size()), y_shape), {gm(1, zeros(y_shape.size()), y_shape)});
    src.push_back(ub(uy, zeros(y_shape.size()), y_shape));
  }
  Instr& in = pb.vec(op, ub(uo, zeros(shape.size()), shape), src);
  in.scalar = scalar;
  in.scalar_first = scalar_first;
  pb.emit(Opcode::TSTORE, gm(binary ? 2 : 1, zeros(shape.size()), shape), {ub(uo, zeros(shape.size()), shape)});
  std::vector<TensorBinding> bindings{{x, zeros(shape.size())}};
  if (binary) bindings.push_back({y, zeros(y_shape.size())});
  bindings.push_back({out, zeros(shape.size())});
  pb.task(k, bindings);
  return pb.p;
}

}  // namespace pto::testing
