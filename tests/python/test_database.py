"""Database from Python: the best record, every record as dicts, export to versioned
JSON, and the merge of shards that lookup() then serves."""

import json

import pto_tune


def test_best_is_the_tuned_winner_and_none_for_an_untuned_workload(tuned_matmul):
    db, result = tuned_matmul
    database = pto_tune.Database(db)
    best = database.best("matmul", [512, 512, 1024], backend="sim")
    assert best is not None
    assert pto_tune.Config(best["config"]) == result.config
    assert database.best("matmul", [512, 512, 1024]) == best  # sim is the default for an NPU target
    assert database.best("matmul", [64, 64, 64]) is None


def test_records_are_every_measurement_as_dicts(tuned_matmul):
    db, result = tuned_matmul
    records = pto_tune.Database(db).records()
    assert iter(records) is records
    records = list(records)
    assert 1 <= len(records) <= result.candidates["measured"]  # identical records are stored once
    assert all(r["workload"].startswith("matmul|512,512,1024|fp16") for r in records)
    assert list(pto_tune.Database(db).records(op="softmax")) == []
    assert len(list(pto_tune.Database(db).records(op="matmul"))) == len(records)


def test_export_writes_the_best_record_per_key_with_what_the_lookup_learns_from(tuned_matmul, tmp_path):
    db, result = tuned_matmul
    out = tmp_path / "configs.json"
    written = pto_tune.Database(db).export(str(out))
    exported = json.loads(out.read_text())
    assert exported["format"] == "pto-tune-configs"
    records = exported["records"]
    assert len(records) == written
    assert pto_tune.Config(records[0]["config"]) == result.config  # the best first
    assert any(r["strategy"] == "default" for r in records)  # the default's, for the lookup's margin
    assert written <= len(list(pto_tune.Database(db).records()))
    imported = str(tmp_path / "imported.db")
    assert pto_tune.Database(imported).import_json(str(out)) == written
    assert pto_tune.Database(imported).best("matmul", [512, 512, 1024]) == pto_tune.Database(db).best(
        "matmul", [512, 512, 1024])


def test_merged_shards_serve_exact_hits(tmp_path):
    shards = []
    for i, shape in enumerate([[256, 256, 256], [128, 512, 256]]):
        shard = str(tmp_path / f"shard{i}.db")
        pto_tune.tune("matmul", shape, backend="model", budget=4, db=shard)
        shards.append(shard)
    merged = str(tmp_path / "merged.db")
    database = pto_tune.Database(merged)
    assert pto_tune.lookup("matmul", [256, 256, 256], db=merged, backend="model").source != "exact"
    summary = database.merge(shards)
    assert summary["inputs"] == 2 and summary["keys"] == 2
    for shape in ([256, 256, 256], [128, 512, 256]):
        assert pto_tune.lookup("matmul", shape, db=merged, backend="model").source == "exact"
