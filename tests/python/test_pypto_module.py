"""The PyPTO module of emit_pypto (and `pto-tune tune/lookup --emit pypto`) run against a
stand-in pypto that is not pto-tune (tests/python/pypto_standin): for every op on every NPU
target, random configs from pto-tune's own space (tuned with the model backend and the
random strategy, every measured config kept) make exactly the setter calls of the config,
stage by stage, and the kernel builds without breaking PyPTO's documented rules. Then the
stand-in is shown to fail where PyPTO would: an over-capacity cube tile, a Cube+Vector
scope on an A2 target."""

import json
import sys
import types
from pathlib import Path

import pytest

import pto_tune

sys.path.insert(0, str(Path(__file__).parent / "pypto_standin"))
import pypto  # noqa: E402  the stand-in, found first on the path

NPU_TARGETS = ["ascend910b1", "ascend910b2", "ascend910b3", "ascend910b4", "ascend910_93", "ascend950pr"]

# A small shape per op, ragged where the op allows it (tails in the views and the tiles).
SHAPES = {
    "matmul": [200, 192, 320], "batch_matmul": [2, 96, 128, 160], "matmul_bias_gelu": [200, 192, 320],
    "add": [100, 300], "mul": [100, 300], "exp": [100, 300], "log": [100, 300], "sqrt": [100, 300],
    "erfc": [100, 300], "gelu": [100, 300], "sum": [64, 200], "amax": [64, 200], "amin": [64, 200],
    "softmax": [64, 256], "layernorm": [64, 256], "rmsnorm": [64, 256], "attention": [1, 2, 64, 64],
    "flash_attention": [1, 4, 256, 512, 128], "elementwise": [100, 300],
}
# The expression of an op that takes one (--expr): every function, scalars on either side,
# a tensor named as a Python keyword.
EXPRS = {"elementwise": "maximum(div(2.0, add(exp(a), in)), sub(1.5, mul(tanh(neg(abs(erf(a)))), 2)))"}
CONFIGS_PER_CASE = 6


def test_every_op_has_a_shape():
    with pytest.raises(pto_tune.UsageError) as unknown:  # its message lists the library's ops
        pto_tune.emit_pypto("no_such_op", [1], {})
    known = str(unknown.value).split("known: ")[1].rstrip(")").split(", ")
    assert sorted(SHAPES) == sorted(known)


def random_configs(op, target, tmp_path):
    """Configs from pto-tune's space: every one the random strategy measured (model backend)."""
    db = str(tmp_path / f"{op}-{target}.db")
    pto_tune.tune(op, SHAPES[op], target=target, backend="model", strategy="random", budget=CONFIGS_PER_CASE,
                  seed=len(op) * 7 + NPU_TARGETS.index(target), db=db, expr=EXPRS.get(op))
    configs = [r["config"] for r in pto_tune.Database(db).records(op) if r["measurement"]["status"] == "OK"]
    assert configs, f"no feasible config of {op} on {target}"
    return [pto_tune.Config(c) for c in configs]


def load(source, name="tuned"):
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def setter_calls(cfg, stage=None):
    """The calls pto_tune.apply makes, as the stand-in records them."""
    pypto.reset()
    pto_tune.apply(cfg, pypto, stage)
    return list(pypto.calls)


def expected_calls(cfg):
    """The config's tiles as setter calls, written out from its JSON (not through cfg.stages):
    the stages by number, the Cube's first (c1, v1, c2, v2), or the op's one cube and vec."""
    tiles = json.loads(cfg.to_json())
    stages = tiles.get("stages", {})
    order = sorted(stages, key=lambda name: (name[1:], name)) if stages else [None]
    calls = []
    for name in order:
        stage = stages[name] if name else tiles
        if "cube" in stage:
            c = stage["cube"]
            k = c["k"][:2] if c["k"][1] == c["k"][-1] else c["k"]
            calls.append(("set_cube_tile_shapes", (c["m"], k, c["n"]), {"enable_split_k": c["split_k"]}))
        if "vec" in stage:
            calls.append(("set_vec_tile_shapes", tuple(stage["vec"]), {}))
    return calls


def run_kernel(module, **kernel_args):
    """Calls the module's kernel inside a stand-in JIT function with its own options."""
    tensors = [pypto.tensor(shape, getattr(pypto, dtype), name) for name, (shape, dtype) in module.TENSORS.items()]

    @pypto.frontend.jit(**module.JIT_OPTIONS)
    def jitted(*args):
        module.kernel(pypto, *args, **kernel_args)

    pypto.reset()
    jitted(*tensors)
    return list(pypto.calls)


@pytest.mark.parametrize("target", NPU_TARGETS)
@pytest.mark.parametrize("op", sorted(SHAPES))
def test_emitted_modules_run_on_the_standin(op, target, tmp_path):
    pypto.set_target(target)
    for cfg in random_configs(op, target, tmp_path):
        module = load(pto_tune.emit_pypto(op, SHAPES[op], cfg, target=target, expr=EXPRS.get(op)))
        assert module.STAGES == tuple(cfg.stages)
        pypto.reset()
        module.apply(pypto)
        assert pypto.calls == expected_calls(cfg) == setter_calls(cfg), cfg
        for name in module.STAGES:
            pypto.reset()
            module.apply(pypto, name)
            assert pypto.calls == setter_calls(cfg, name)
        assert module.tiles_for(SHAPES[op]) is module.TILES
        calls = run_kernel(module)
        if op == "flash_attention":  # each KV block sets c1, v1, c2, v2 again, in that order
            setters = [c for c in calls if c[0].startswith("set_")]
            stages = expected_calls(cfg)
            assert setters[:len(stages)] == stages and all(c in stages for c in setters), cfg
            continue
        # A K loop sets the vec tile of its adds after the loop (the guide's 配置add切分大小).
        adds = [("set_vec_tile_shapes", module.ADD_TILE, {})] if cfg.cube and cfg.cube.k_view else []
        assert [c for c in calls if c[0].startswith("set_") and c[0] != "set_pass_options"] == expected_calls(cfg) + adds
        check_structure(cfg, calls)


def check_structure(cfg, calls):
    """The fusion groups are sg_set_scope brackets 1..n, the L2 grouping a view loop with
    L2-affine scheduling."""
    scopes = [c[2]["sg_set_scope"] for c in calls if c[0] == "set_pass_options"]
    groups = len(cfg.fusion or [])
    assert [s for s in scopes if s != -1] == list(range(1, groups + 1)), (cfg, scopes)
    assert scopes.count(-1) == groups
    loops = [c for c in calls if c[0] == "loop"]
    if cfg.l2_group is None:
        assert loops == [] and pypto.jit_options == {}
    else:
        assert loops and pypto.jit_options == {"runtime_options": {"device_sched_mode": 1}}


# ---- The module's own API --------------------------------------------------------------------

GUIDE = {"cube": {"m": [128, 128], "k": [64, 256], "n": [256, 256]}, "l2_group": [6, 4], "nbuffer": 2}


def test_the_guides_l2_split_is_a_loop_over_views():
    source = pto_tune.emit_pypto("matmul", [6144, 6144, 6144], GUIDE)
    assert "m_view = min(tiles.main.cube.m[1] * 6, 6144)" in source  # 768 rows, 1024 columns a block
    assert 'JIT_OPTIONS = {"runtime_options": {"device_sched_mode": 1}}' in source
    assert "PyPTO has no such setter" in source  # nbuffer is pto-tune's, a comment
    pypto.set_target("ascend910b1")
    calls = run_kernel(load(source))
    assert [c[1] for c in calls if c[0] == "loop"] == [(0, 8, 1)] + [(0, 6, 1)] * 8


def test_the_views_follow_the_tiles_the_kernel_is_given():
    module = load(pto_tune.emit_pypto("matmul", [1000, 256, 1000], GUIDE))
    smaller = module.Tiles(main=module.StageTiles(cube=module.CubeTiles(m=(64, 64), k=(64, 256), n=(128, 128))))
    pypto.set_target("ascend910b1")
    calls = run_kernel(module, tiles=smaller)
    # 1000 rows in blocks of 64 x 6 = 384 (a tail of 232), 1000 columns in blocks of 128 x 4 = 512.
    assert [c[1] for c in calls if c[0] == "loop"] == [(0, 3, 1)] + [(0, 2, 1)] * 3
    assert calls[0] == ("set_cube_tile_shapes", ([64, 64], [64, 256], [128, 128]), {"enable_split_k": False})


def counting_matmuls(monkeypatch):
    """The stand-in's matmul, counting its calls and the K of each operand view."""
    ks = []
    real = pypto.matmul

    def matmul(a, b, out_dtype, **kwargs):
        ks.append(a.shape[-1])
        return real(a, b, out_dtype, **kwargs)

    monkeypatch.setattr(pypto, "matmul", matmul)
    return ks


@pytest.mark.parametrize("l2_group", [None, [2, 2]])
def test_a_k_loop_is_a_matmul_per_k_view_summed_after_its_scope(monkeypatch, l2_group):
    cfg = {"cube": {"m": [32, 32], "k": [32, 128], "n": [32, 32], "k_view": 384}, "fusion": [[2]]}
    if l2_group:
        cfg["l2_group"] = l2_group
    module = load(pto_tune.emit_pypto("matmul", [64, 1000, 64], cfg, dtype="fp32"))
    assert module.TILES.main.cube.k_view == 384
    assert len(module.ADD_TILE) == 2
    ks = counting_matmuls(monkeypatch)
    pypto.set_target("ascend910b1")
    calls = run_kernel(module)
    # K = 1000: two whole views and a tail; 64 x 64 is one L2 block of 2 x 2 tiles of 32.
    assert ks == [384, 384, 232]
    scopes = [c[2]["sg_set_scope"] for c in calls if c[0] == "set_pass_options"]
    assert scopes == [1, -1]  # the adds run outside the matmul's (pure Cube) scope
    assert calls[-1] == ("set_vec_tile_shapes", module.ADD_TILE, {})
    # The simulator runs the program the module describes; fp16 writes no fp32 partial sums.
    assert pto_tune.run("matmul", [64, 1000, 64], cfg, dtype="fp32", backend="sim").ok
    with pytest.raises(pto_tune.InfeasibleConfig, match="k_view"):
        pto_tune.run("matmul", [64, 1000, 64], cfg, backend="sim")


FA_STAGES = {"c1": {"cube": {"m": [64, 64], "k": [64, 64], "n": [128, 128]}}, "v1": {"vec": [16, 128]},
             "c2": {"cube": {"m": [64, 64], "k": [64, 128], "n": [64, 64]}}, "v2": {"vec": [16, 64]}}


def flash_attention_calls(monkeypatch, shape, attention, attrs=None):
    """The matmuls (their [rows, cols] of S or O) and the partial tensors of the emitted kernel."""
    cfg = {"attention": attention, "stages": FA_STAGES, "nbuffer": 2}
    module = load(pto_tune.emit_pypto("flash_attention", shape, cfg, attrs=attrs))
    shapes = []
    real = pypto.matmul

    def matmul(a, b, out_dtype, **kwargs):
        result = real(a, b, out_dtype, **kwargs)
        shapes.append(tuple(result.shape[2:]))
        return result

    monkeypatch.setattr(pypto, "matmul", matmul)
    pypto.set_target("ascend910b1")
    run_kernel(module)
    return shapes


def test_flash_attention_skips_fully_masked_blocks(monkeypatch):
    attention = {"q_tile": 64, "kv_tile": 128, "kv_split": 1, "order": "bhq"}
    full = flash_attention_calls(monkeypatch, [1, 2, 256, 512, 64], attention)
    assert len(full) == 2 * 2 * 4 * 4  # two matmuls per (head, Q block, KV block)
    causal = flash_attention_calls(monkeypatch, [1, 2, 256, 512, 64], attention, {"causal": 1})
    # The diagonal is bottom-right aligned (SKV - SQ = 256): Q blocks 0..3 see 3, 3, 4, 4 KV blocks.
    assert len(causal) == 2 * 2 * (3 + 3 + 4 + 4)
    ragged = flash_attention_calls(monkeypatch, [1, 1, 100, 300, 64], attention)
    assert sorted(set(ragged)) == [(36, 44), (36, 64), (36, 128), (64, 44), (64, 64), (64, 128)]


def test_flash_attention_splits_kv_and_dequantizes_int8(monkeypatch):
    attention = {"q_tile": 16, "kv_tile": 256, "kv_split": 3, "order": "qbh"}
    shapes = flash_attention_calls(monkeypatch, [2, 4, 16, 1024, 128], attention, {"kv_heads": 2, "kv_dtype": "int8"})
    assert len(shapes) == 2 * 4 * 4 * 2  # every KV block once over the splits (2, 2 and 0 of them)
    source = pto_tune.emit_pypto("flash_attention", [2, 4, 16, 1024, 128], {"attention": attention, "stages": FA_STAGES},
                                 attrs={"kv_heads": 2, "kv_dtype": "int8"})
    assert "KV_QUANT_BLOCK = 128" in source and "CAUSAL = False" in source


def test_apply_of_an_unknown_stage_names_the_stages():
    module = load(pto_tune.emit_pypto("matmul", [256, 256, 256], GUIDE))
    with pytest.raises(ValueError, match="main"):
        module.apply(pypto, "c1")
    with pytest.raises(pto_tune.UsageError, match="main"):
        pto_tune.apply(pto_tune.Config(GUIDE), pypto, "c1")


def test_the_header_says_where_the_config_came_from(tmp_path):
    db = str(tmp_path / "t.db")
    pto_tune.tune("softmax", [64, 256], backend="model", budget=3, db=db)
    cfg = pto_tune.lookup("softmax", [64, 256], db=db)
    source = pto_tune.emit_pypto("softmax", [64, 256], cfg)
    assert "# from: pto_tune, config source 'exact'" in source
    assert json.loads(source.split("# config: ")[1].splitlines()[0]) == json.loads(cfg.to_json())
    assert "given to pto_tune.emit_pypto" in pto_tune.emit_pypto("softmax", [64, 256], cfg.to_json())


def test_an_elementwise_chain_is_written_call_by_call_as_the_tutorials_write_it():
    source = pto_tune.emit_pypto("elementwise", [1024, 4096], {"vec": [64, 512]}, dtype="fp32",
                                 expr="mul(add(a, b), 2)")
    assert "elementwise|1024,4096|fp32|expr=mul(add(a,b),2.0)" in source
    assert "def kernel(pypto, a, b, out" not in source  # fp32: the chain's last call is the output
    assert "    add0 = pypto.add(a, b)\n    mul1[:] = pypto.mul(add0, 2.0)\n" in source
    pypto.set_target("ascend910b1")
    calls = run_kernel(load(source))  # the stand-in checks each call's operands
    assert calls == [("set_vec_tile_shapes", (64, 512), {})]
    with pytest.raises(pto_tune.UsageError, match="unknown function 'pow'.*position 1"):
        pto_tune.emit_pypto("elementwise", [8, 8], {}, expr="pow(a, 2)")
    with pytest.raises(pto_tune.UsageError, match="needs an expression"):
        pto_tune.emit_pypto("elementwise", [8, 8], {})


def test_a_workload_that_is_not_an_op_is_a_usage_error():
    with pytest.raises(pto_tune.UsageError, match="conv"):
        pto_tune.emit_pypto("conv", [8, 8], GUIDE)


# ---- The stand-in fails where PyPTO would -------------------------------------------------------

def test_an_over_capacity_cube_tile_raises():
    big = {"cube": {"m": [256, 256], "k": [256, 256], "n": [256, 256]}}  # 128 KiB of fp16 in L0A
    module = load(pto_tune.emit_pypto("matmul", [512, 512, 512], big))
    pypto.set_target("ascend910b1")
    with pytest.raises(ValueError, match="L0A"):
        run_kernel(module)


def test_a_cube_and_vector_scope_raises_on_a2_but_not_on_950():
    # matmul_bias_gelu's matmul (node 3) and its whole epilogue in one scope.
    fused = {"cube": {"m": [128, 128], "k": [64, 256], "n": [256, 256]}, "vec": [16, 256],
             "fusion": [[3, 4, 5, 6, 7, 8, 9, 10, 11]]}
    for target, fails in (("ascend910b1", True), ("ascend910_93", True), ("ascend950pr", False)):
        module = load(pto_tune.emit_pypto("matmul_bias_gelu", [256, 256, 256], fused, target=target))
        pypto.set_target(target)
        if fails:
            with pytest.raises(ValueError, match="Cube and Vector"):
                run_kernel(module)
        else:
            run_kernel(module)


@pytest.mark.parametrize("call, rule", [
    (lambda: pypto.set_cube_tile_shapes([128], [64, 256], [256, 256]), "m and n take"),
    (lambda: pypto.set_cube_tile_shapes([128, 128], [64, 128, 256, 512], [256, 256]), "k takes"),
    (lambda: pypto.set_cube_tile_shapes([128, 128], [96, 256], [256, 256]), "must divide"),
    (lambda: pypto.set_cube_tile_shapes([256, 128], [64, 256], [256, 256]), "must divide"),
    (lambda: pypto.set_cube_tile_shapes([0, 128], [64, 256], [256, 256]), "positive"),
    (lambda: pypto.set_vec_tile_shapes(), "1 to 4"),
    (lambda: pypto.set_vec_tile_shapes(1, 2, 3, 4, 5), "1 to 4"),
    (lambda: pypto.set_vec_tile_shapes(8, -1), "positive"),
    (lambda: pypto.set_pass_options(sg_set_scope=-2), "sg_set_scope"),
    (lambda: pypto.set_pass_options(sg_set_scope=(1, True)), "sg_set_scope"),
    (lambda: pypto.frontend.jit(runtime_options={"device_sched_mode": 4}), "device_sched_mode"),
    (lambda: pypto.frontend.jit(runtime_options={"l2_group": 1}), "unknown runtime_options"),
    (lambda: list(pypto.loop(0, 4, 0)), "step"),
])
def test_the_standin_refuses_what_pypto_documents_as_wrong(call, rule):
    pypto.reset()
    with pytest.raises(ValueError, match=rule):
        call()


def matmul_with(cube, dtype, out_dtype):
    pypto.reset()
    pypto.set_cube_tile_shapes(*cube)
    a = pypto.tensor([256, 256], dtype, "a")
    return pypto.matmul(a, pypto.tensor([256, 256], dtype, "b"), out_dtype)


def test_the_standin_checks_alignment_capacity_and_split_k_at_the_matmul():
    pypto.set_target("ascend910b1")
    matmul_with(([128, 128], [64, 256], [256, 256]), pypto.DT_FP16, pypto.DT_FP16)  # the guide's tiles fit
    with pytest.raises(ValueError, match="multiple of 16"):
        matmul_with(([120, 120], [64, 256], [256, 256]), pypto.DT_FP16, pypto.DT_FP16)
    with pytest.raises(ValueError, match="multiple of 32"):
        matmul_with(([16, 16], [64, 256], [256, 256]), pypto.DT_INT8, pypto.DT_INT32)
    with pytest.raises(ValueError, match="L1"):  # (128 x 512 + 256 x 512) fp16 = 384 KiB... x2 for kBL1
        matmul_with(([128, 128], [64, 512, 1024], [256, 256]), pypto.DT_FP16, pypto.DT_FP16)
    with pytest.raises(ValueError, match="L0C"):  # 256 x 256 fp32 = 256 KiB > 128 KiB
        matmul_with(([256, 256], [16, 16], [256, 256]), pypto.DT_FP16, pypto.DT_FP16)
    pypto.set_target("ascend950pr")  # its 256 KiB L0C holds it
    matmul_with(([256, 256], [16, 16], [256, 256]), pypto.DT_FP16, pypto.DT_FP16)
    with pytest.raises(ValueError, match="enable_split_k"):
        matmul_with(([128, 128], [64, 256], [256, 256], True), pypto.DT_FP16, pypto.DT_FP16)
    matmul_with(([128, 128], [64, 256], [256, 256], True), pypto.DT_FP16, pypto.DT_FP32)
    with pytest.raises(ValueError, match="set_cube_tile_shapes first"):
        pypto.reset()
        pypto.matmul(pypto.tensor([16, 16], pypto.DT_FP16), pypto.tensor([16, 16], pypto.DT_FP16), pypto.DT_FP16)


def test_the_standin_checks_shapes():
    pypto.reset()
    a, b = pypto.tensor([4, 8], pypto.DT_FP32, "a"), pypto.tensor([4, 9], pypto.DT_FP32, "b")
    with pytest.raises(ValueError, match="broadcast"):
        pypto.add(a, b)
    with pytest.raises(ValueError, match="only"):
        a[0:2] = a
    with pytest.raises(ValueError, match="the tensor is"):
        a[:] = pypto.sum(a, 1)
    with pytest.raises(ValueError, match="leaves"):
        pypto.view(a, [4, 8], [1, 0])
