"""Config: built from JSON text or a dict, read as PyPTO's setter arguments, written
back as canonical JSON and as the PyPTO lines to paste; apply() on a stand-in module."""

import json
import random

import pytest

import pto_tune

CUBE = {"cube": {"m": [128, 128], "k": [64, 256], "n": [256, 256]}, "nbuffer": 2, "l2_group": [6, 4]}


def random_config(rng):
    cfg = {}
    if rng.random() < 0.7:
        m0, k0, n0 = (16 * rng.randint(1, 16) for _ in range(3))
        kal1 = k0 * rng.randint(1, 4)
        kbl1 = kal1 * rng.choice([1, 2]) if rng.random() < 0.3 else kal1
        cfg["cube"] = {"m": [m0, m0 * rng.randint(1, 4)], "k": [k0, kal1, kbl1] if kbl1 != kal1 else [k0, kal1],
                       "n": [n0, n0 * rng.randint(1, 4)], "split_k": rng.random() < 0.2}
    if rng.random() < 0.7:
        cfg["vec"] = [rng.randint(1, 512) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.5:
        cfg["nbuffer"] = rng.randint(1, 4)
    if rng.random() < 0.3:
        cfg["l2_group"] = [rng.randint(1, 8), rng.randint(1, 8)]
    return cfg


def test_random_configs_read_as_their_json_says():
    rng = random.Random(7)
    for _ in range(200):
        given = random_config(rng)
        cfg = pto_tune.Config(given)
        assert json.loads(cfg.to_json()) == given
        assert pto_tune.Config(cfg.to_json()) == cfg
        assert cfg.vec == given.get("vec")
        assert cfg.nbuffer == given.get("nbuffer")
        assert cfg.preload is None
        assert cfg.l2_group == given.get("l2_group")
        if "cube" in given:
            cube = given["cube"]
            assert (cfg.cube.m, cfg.cube.k, cfg.cube.n, cfg.cube.split_k) == (
                cube["m"], cube["k"], cube["n"], cube["split_k"])
        else:
            assert cfg.cube is None
        assert cfg.source == "given" and not cfg.stale


def test_pypto_calls_are_the_lines_to_paste():
    lines = pto_tune.Config(dict(CUBE, vec=[8, 64])).pypto_calls().splitlines()
    assert lines[0] == "pypto.set_cube_tile_shapes([128,128],[64,256],[256,256])"
    assert lines[1] == "pypto.set_vec_tile_shapes(8,64)"
    assert all(line.startswith("#") for line in lines[2:])
    assert any("2" in line and "n-buffer" in line for line in lines[2:])
    compile("\n".join(lines), "<pasted>", "exec")  # the whole block is valid Python


def test_apply_calls_the_setters_with_the_configs_tiles(standin):
    pto_tune.apply(pto_tune.Config(dict(CUBE, vec=[4, 8, 16])), standin)
    assert standin.calls == [("cube", [128, 128], [64, 256], [256, 256], False), ("vec", [4, 8, 16])]


def test_apply_passes_three_k_sizes_and_split_k(standin):
    cfg = pto_tune.Config({"cube": {"m": [32, 64], "k": [32, 64, 128], "n": [32, 64], "split_k": True}})
    pto_tune.apply(cfg, standin)
    assert standin.calls == [("cube", [32, 64], [32, 64, 128], [32, 64], True)]


def test_apply_of_a_config_without_tiles_calls_nothing(standin):
    pto_tune.apply(pto_tune.Config({"nbuffer": 2}), standin)
    assert standin.calls == []


def test_apply_needs_a_config(standin):
    with pytest.raises(pto_tune.UsageError):
        pto_tune.apply({"vec": [8]}, standin)


def test_a_module_without_the_setter_is_pythons_attribute_error():
    with pytest.raises(AttributeError):
        pto_tune.apply(pto_tune.Config({"vec": [8]}), object())


def test_flash_attention_preload_is_the_configs_or_one_less_than_the_depth():
    loop = {"q_tile": 128, "kv_tile": 256}
    assert pto_tune.Config({"attention": loop, "nbuffer": 2}).preload == 1
    assert pto_tune.Config({"attention": loop}).preload == 0
    assert pto_tune.Config({"attention": dict(loop, preload=4), "nbuffer": 2}).preload == 4
