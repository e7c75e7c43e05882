#!/usr/bin/env python3
"""Hostile-input probe of pto-tune's database, release path, batch files, traces and
Python package (issue 31, "Done when"): each case runs one command on one bad input
and checks what a user may count on:

  - no crash signal, no hang (every command runs under a timeout);
  - exit code 2 with a message for bad input, 0 where the command is meant
    to go on (lookup on a database it cannot read, a sound file with bad rows), never
    1 (I/O or internal error) for input that is merely bad;
  - the database file intact: unchanged byte for byte after a read, or after a write
    that was refused; after an accepted write (tune, import, merge) no record lost and,
    for a database that was sound, `db check` still ok;
  - an import that is accepted passes `db check` (imported records are validated as
    tuned ones); one that is refused leaves the database unchanged (all or none);
  - Python raises pto_tune.Error subclasses (or TypeError for an argument of the wrong
    Python type), never another exception or a crash.

The cases are generated combinatorially: bad databases x the commands that open one;
mutations of every field of an exported record, of every column of an mstuner CSV, of
every top-level member of an export; bad batch entries x formats x options; bad output
paths x the commands that write one; bad arguments x the Python functions.

  scripts/probe_hostile.py --all                 # every case (a few minutes)
  scripts/probe_hostile.py --sample 600          # a fixed sample (ctest: probe_hostile)
  scripts/probe_hostile.py --list                # the case names
  scripts/probe_hostile.py --only 'db/fifo/*'    # cases matching a glob

--bin is the pto-tune executable (default build/cli/pto-tune), --pythonpath the folder
holding the pto_tune package (default build/python; Python cases are skipped, and
said so, when it cannot be imported). Exit status 1 when a case fails.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import random
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60  # a case past this is a hang
TARGET = "ascend910b1"


class Ran:
    def __init__(self, argv, proc=None, timed_out=False):
        self.argv = argv
        self.rc = proc.returncode if proc else None
        self.out = proc.stdout if proc else ""
        self.err = proc.stderr if proc else ""
        self.timed_out = timed_out

    def describe(self):
        return f"{' '.join(self.argv)[:300]}\n    rc={self.rc} stderr={self.err[-400:]!r}"


class Probe:
    def __init__(self, binary, pythonpath, scratch):
        self.bin = binary
        self.pythonpath = pythonpath
        self.scratch = scratch
        self.python_ok = self._python_importable()

    def env(self, home):
        env = dict(os.environ)
        env.pop("PTO_TUNE_DB", None)
        env.update(HOME=home, PTO_TUNE_HOME=home, PYTHONPATH=self.pythonpath, PYTHONDONTWRITEBYTECODE="1")
        return env

    def run(self, argv, home, stdin=None, timeout=TIMEOUT_S):
        try:
            proc = subprocess.run(argv, env=self.env(home), cwd=home, capture_output=True, text=True,
                                  errors="replace", timeout=timeout, stdin=stdin or subprocess.DEVNULL)
            return Ran(argv, proc)
        except subprocess.TimeoutExpired:
            return Ran(argv, timed_out=True)

    def cli(self, args, home, timeout=TIMEOUT_S):
        return self.run([self.bin] + args, home, timeout=timeout)

    def python(self, code, home):
        return self.run([sys.executable, "-c", code], home)

    def _python_importable(self):
        home = tempfile.mkdtemp(dir=self.scratch)
        return self.python("import pto_tune", home).rc == 0


# ---------------------------------------------------------------------------------
# Checks. Each returns a list of problems (empty: the case passed).

def signal_or_hang(r):
    if r.timed_out:
        return [f"hang (over {TIMEOUT_S} s): {r.describe()}"]
    if r.rc is not None and r.rc < 0:
        return [f"killed by signal {-r.rc}: {r.describe()}"]
    return []


def exit_in(r, allowed):
    problems = signal_or_hang(r)
    if problems:
        return problems
    if r.rc not in allowed:
        return [f"exit {r.rc}, expected {' or '.join(map(str, sorted(allowed)))}: {r.describe()}"]
    if r.rc == 2 and "pto-tune" not in r.err and not r.out.strip():  # db check reports on stdout
        return [f"exit 2 without a message: {r.describe()}"]
    return []


def digest(path):
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def measurement_count(path):
    if not os.path.isfile(path):  # a FIFO would block the probe's own open
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as c:
            return c.execute("SELECT count(*) FROM measurements").fetchone()[0]
    except sqlite3.Error:
        return None


def unchanged(path, before, what):
    after = digest(path)
    if before is not None and after != before:
        return [f"{what}: the database '{path}' changed"]
    return []


# ---------------------------------------------------------------------------------
# Fixtures: a sound database with tuned records, its export and an mstuner CSV; every
# case works on copies in a folder of its own.

class Fixtures:
    def __init__(self, probe):
        self.probe = probe
        self.dir = tempfile.mkdtemp(prefix="fixtures-", dir=probe.scratch)
        self.db = os.path.join(self.dir, "good.db")
        for op, shapes in (("matmul", "64,64,64"), ("softmax", "64,128"), ("matmul", "128,64,32")):
            r = probe.cli(["tune", "--op", op, "--shapes", shapes, "--backend", "model", "--budget", "3",
                           "--target", TARGET, "--db", self.db], self.dir)
            if r.rc != 0:
                sys.exit(f"probe_hostile: cannot make the fixture database: {r.describe()}")
        self.export = os.path.join(self.dir, "good.json")
        r = probe.cli(["db", "export", self.export, "--db", self.db], self.dir)
        if r.rc != 0:
            sys.exit(f"probe_hostile: cannot export the fixture database: {r.describe()}")
        with open(self.export) as f:
            self.export_json = json.load(f)
        self.count = measurement_count(self.db)

    def copy_db(self, folder, name="tune.db"):
        path = os.path.join(folder, name)
        shutil.copyfile(self.db, path)
        return path


CSV_HEADER = "case_id,task_duration(us),device_id,operation,description,m,n,k,A,B,C"
CSV_ROW = ["1", "12.740", "0", "Gemm",
           "catlass_gemm_basic_matmul_fp16xRowMajor_fp16xRowMajor_fp16xRowMajor_64x128x128_64x128x64_swizzle3x1",
           "256", "512", "1024", "fp16:row", "fp16:row", "fp16:row"]


# ---------------------------------------------------------------------------------
# Bad databases. Each makes `path` (a copy of the sound database when `copy`) into
# something hostile. `damaged`: `db check` must say so (exit 2). `sound`: the read
# commands must go on (exit 0), each bad row costing its own record only.

def sql(statements):
    def apply(path):
        c = sqlite3.connect(path)
        c.executescript(statements)
        c.commit()
        c.close()
    return apply


def write_bytes(data):
    def apply(path):
        with open(path, "wb") as f:
            f.write(data)
    return apply


def overwrite_at(offset, data):
    def apply(path):
        with open(path, "r+b") as f:
            f.seek(offset)
            f.write(data)
    return apply


def truncate_to(size):
    def apply(path):
        os.truncate(path, size)
    return apply


def beside(suffix, data):
    def apply(path):
        with open(path + suffix, "wb") as f:
            f.write(data)
    return apply


def plant(kind, path):
    """Makes `path` something that is not a regular file; False for another kind."""
    if kind == "folder":
        os.mkdir(path)
    elif kind in ("fifo", "fifo_unread"):
        os.mkfifo(path)
    elif kind == "char_device":
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device of our own
    elif kind == "symlink_loop":
        os.symlink(os.path.basename(path), path)
    elif kind == "dangling_symlink":
        os.symlink(os.path.join("nowhere", "x"), path)
    elif kind == "socket":
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
    else:
        return False
    return True


def replace_with(kind):
    def apply(path):
        os.remove(path)
        plant(kind, path)
    return apply


def foreign_db(path):
    os.remove(path)
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE notes (x TEXT)")
    c.execute("INSERT INTO notes VALUES ('mine')")
    c.commit()
    c.close()


def chmod(mode):
    def apply(path):
        os.chmod(path, mode)
    return apply


BAD_DATABASES = {
    # name: (mutation, damaged, sound)
    "empty_file": (write_bytes(b""), False, False),
    "text_file": (write_bytes(b"my notes\n"), True, False),
    "binary_junk": (write_bytes(bytes(range(256)) * 64), True, False),
    "header_only": (truncate_to(100), True, False),
    "truncated_1k": (truncate_to(1024), True, False),
    "truncated_half": (truncate_to(8192), True, False),
    "junk_in_header": (overwrite_at(16, b"\xff" * 16), True, False),
    "junk_in_schema_page": (overwrite_at(100, b"\xa5" * 300), True, False),
    "junk_in_page_2": (overwrite_at(4096, b"\x5a" * 512), True, False),
    "zeroed_page_3": (overwrite_at(8192, b"\0" * 4096), True, False),
    "drop_measurements": (sql("DROP TABLE measurements"), True, False),
    "drop_workloads": (sql("DROP TABLE workloads"), True, False),
    "drop_configs": (sql("DROP TABLE configs"), True, False),
    "drop_targets": (sql("DROP TABLE targets"), True, False),
    "drop_schema_version": (sql("DROP TABLE schema_version"), True, False),
    "drop_column_detail": (sql("ALTER TABLE measurements DROP COLUMN detail"), True, False),
    "drop_column_attrs": (sql("ALTER TABLE workloads DROP COLUMN attrs"), True, False),
    "drop_index_best": (sql("DROP INDEX measurements_best"), True, True),
    "version_99": (sql("UPDATE schema_version SET version = 99"), True, False),
    "version_0": (sql("UPDATE schema_version SET version = 0"), True, False),
    "version_negative": (sql("UPDATE schema_version SET version = -1"), True, False),
    "version_text": (sql("UPDATE schema_version SET version = 'one'"), True, False),
    "version_row_deleted": (sql("DELETE FROM schema_version"), True, False),
    "version_two_rows": (sql("INSERT INTO schema_version VALUES (7)"), True, False),
    "foreign_database": (foreign_db, True, False),
    "foreign_trigger": (sql("CREATE TRIGGER wipe AFTER INSERT ON measurements BEGIN DELETE FROM measurements; END"),
                        True, True),
    "foreign_view": (sql("CREATE VIEW peek AS SELECT * FROM targets"), True, True),
    "row_bad_config": (sql("UPDATE configs SET json = '{\"vec\":' WHERE id = 1"), True, True),
    "row_deep_config": (sql("UPDATE configs SET json = '" + "[" * 5000 + "]" * 5000 + "' WHERE id = 1"), True, True),
    "row_bad_key": (sql("UPDATE workloads SET key = 'garbage|x' WHERE id = 1"), True, True),
    "row_huge_key": (sql("UPDATE workloads SET key = 'matmul|' || printf('%.*c', 1000000, '9') || '|fp16' WHERE id = 1"),
                     True, True),
    "row_bad_status": (sql("UPDATE measurements SET status = 'BOGUS' WHERE id = 1"), True, True),
    "row_text_median": (sql("UPDATE measurements SET median_ns = 'fast' WHERE id = 1"), True, True),
    "row_negative_median": (sql("UPDATE measurements SET median_ns = -5 WHERE id = 1"), True, True),
    "row_huge_timestamp": (sql("UPDATE measurements SET timestamp = 9223372036854775807"), False, True),
    "row_bad_detail": (sql("UPDATE measurements SET detail = '{not json' WHERE id = 1"), True, True),
    "row_orphan": (sql("UPDATE measurements SET workload_id = 999 WHERE id = 1"), True, True),
    "row_unknown_backend": (sql("UPDATE measurements SET backend = 'nosuch' WHERE id = 1"), True, True),
    "row_blob_key": (sql("UPDATE workloads SET key = x'00ff00' WHERE id = 1"), True, True),
    "row_host_not_utf8": (sql("UPDATE measurements SET host = CAST(x'ff41' AS TEXT) WHERE id = 1"), True, True),
    "row_error_not_utf8": (sql("UPDATE measurements SET error = CAST(x'c0af' AS TEXT) WHERE id = 1"), True, True),
    "wal_junk": (beside("-wal", b"junk" * 1000), False, True),
    "journal_junk": (beside("-journal", b"junk" * 1000), False, False),  # hot: a writer rolls it back
    "shm_junk": (beside("-shm", b"\xff" * 32768), False, True),
    "folder": (replace_with("folder"), True, False),
    "fifo": (replace_with("fifo"), True, False),
    "symlink_loop": (replace_with("symlink_loop"), True, False),
    "dangling_symlink": (replace_with("dangling_symlink"), True, False),
    "char_device": (replace_with("char_device"), True, False),
    "socket": (replace_with("socket"), True, False),
    "read_only_file": (chmod(0o444), False, True),
}

# The commands that open a database, `{db}` standing for it. kind: "read" (the file
# must stay byte for byte), "write" (it may change only when the command succeeds),
# "lookup" (must exit 0: the JIT goes on), "check".
DB_COMMANDS = {
    "show": ("read", ["db", "show", "--db", "{db}"]),
    "show_json_op": ("read", ["db", "show", "--json", "--op", "matmul", "--db", "{db}"]),
    "check": ("check", ["db", "check", "--db", "{db}"]),
    "export": ("read", ["db", "export", "{dir}/out.json", "--db", "{db}"]),
    "merge_from": ("read", ["db", "merge", "{db}", "--into", "{dir}/merged.db"]),
    "report": ("read", ["report", "--db", "{db}", "--out", "{dir}/report"]),
    "lookup": ("lookup", ["lookup", "--op", "matmul", "--shapes", "64,64,64", "--target", TARGET, "--db", "{db}"]),
    "lookup_strict": ("read", ["lookup", "--strict", "--json", "--op", "matmul", "--shapes", "64,64,64",
                               "--target", TARGET, "--db", "{db}"]),
    "import": ("write", ["db", "import", "{export}", "--db", "{db}"]),
    "import_measurements": ("write", ["db", "import-measurements", "{csv}", "--format", "mstuner-csv",
                                      "--target", TARGET, "--db", "{db}"]),
    "merge_into": ("write", ["db", "merge", "{other}", "--into", "{db}"]),
    "tune": ("write", ["tune", "--op", "matmul", "--shapes", "32,32,32", "--backend", "model", "--budget", "2",
                       "--target", TARGET, "--db", "{db}"]),
    "batch": ("write", ["batch", "{batch}", "--backend", "model", "--budget", "2", "--target", TARGET, "--db", "{db}"]),
}


def fill(args, values):
    return [a.format(**values) for a in args]


def db_case(probe, fx, variant, command):
    mutate, damaged, sound = BAD_DATABASES[variant]
    kind, args = DB_COMMANDS[command]

    def run(folder):
        db = fx.copy_db(folder)
        mutate(db)
        values = dict(db=db, dir=folder, export=fx.export, other=fx.copy_db(folder, "other.db"),
                      csv=write_file(folder, "m.csv", CSV_HEADER + "\n" + ",".join(CSV_ROW) + "\n"),
                      batch=write_file(folder, "b.txt", "softmax 32,64\n"))
        before = digest(db)
        count_before = measurement_count(db)
        r = probe.cli(fill(args, values), folder)
        if kind == "lookup":
            problems = exit_in(r, {0})
        elif kind == "check":
            problems = exit_in(r, {2} if damaged else {0, 2})
        elif sound and kind == "read" and command != "lookup_strict":
            problems = exit_in(r, {0})
        else:
            problems = exit_in(r, {0, 2})
        if problems:
            return problems
        if kind != "write" or r.rc != 0:
            return unchanged(db, before, command)
        count_after = measurement_count(db)
        if count_before is not None and (count_after is None or count_after < count_before):
            return [f"{command}: records lost ({count_before} before, {count_after} after)"]
        if not damaged:
            check = probe.cli(["db", "check", "--db", db], folder)
            if check.rc != 0:
                return [f"{command} on a sound file left it failing db check: {check.out[-300:]}"]
        return []
    return run


def write_file(folder, name, text, mode="w"):
    path = os.path.join(folder, name)
    with open(path, mode) as f:
        f.write(text)
    return path


# ---------------------------------------------------------------------------------
# The release path: an export file and an mstuner CSV, mutated field by field, each
# imported into a copy of the sound database. Accepted: db check ok on the result;
# refused: exit 2 and the database unchanged.

HOSTILE_VALUES = {
    "deleted": None,  # the member removed
    "null": "__null__",
    "zero": 0,
    "negative": -1,
    "huge_int": 2**63,
    "float": 1.5,
    "nan_text": "NaN",
    "empty_text": "",
    "long_text": "x" * 100000,
    "true": True,
    "empty_list": [],
    "empty_object": {},
    "deep": json.loads("[" * 63 + "]" * 63),
}


def leaf_paths(value, path=()):
    if isinstance(value, dict) and value:
        out = [path] if path else []
        for k, v in value.items():
            out += leaf_paths(v, path + (k,))
        return out
    if isinstance(value, list) and value:
        out = [path]
        for i, v in enumerate(value):
            out += leaf_paths(v, path + (i,))
        return out
    return [path]


def mutated(document, path, hostile):
    doc = json.loads(json.dumps(document))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if hostile == "deleted":
        if isinstance(parent, list):
            parent.pop(path[-1])
        else:
            parent.pop(path[-1], None)
    else:
        value = HOSTILE_VALUES[hostile]
        parent[path[-1]] = None if value == "__null__" else value
    return doc


def import_case(probe, fx, make_file, command):
    def run(folder):
        db = fx.copy_db(folder)
        file = make_file(folder)
        before, count_before = digest(db), measurement_count(db)
        r = probe.cli(command(file, db), folder)
        problems = exit_in(r, {0, 2})
        if problems:
            return problems
        if r.rc != 0:
            return unchanged(db, before, "a refused import")
        if measurement_count(db) < count_before:
            return ["an import lost records"]
        check = probe.cli(["db", "check", "--db", db], folder)
        if check.rc != 0:
            return [f"an accepted import fails db check: {check.out[-400:]}\n    {r.describe()}"]
        return []
    return run


def export_import(file, db):
    return ["db", "import", file, "--db", db]


def csv_import(file, db):
    return ["db", "import-measurements", file, "--format", "mstuner-csv", "--target", TARGET, "--db", db]


TOP_LEVEL_FILES = {
    "empty": "",
    "bom_then_export": None,  # filled from the fixture
    "not_json": "exported records\n",
    "list": "[]",
    "string": '"pto-tune-configs"',
    "null": "null",
    "nan_literal": '{"format":"pto-tune-configs","version":1,"records":[NaN]}',
    "deep_10000": "[" * 10000 + "]" * 10000,
    "deep_objects": '{"a":' * 5000 + "1" + "}" * 5000,
    "trailing_garbage": None,
    "duplicate_records": None,
    "huge_number": '{"format":"pto-tune-configs","version":1e999,"records":[]}',
    "nul_bytes": '{"format":"pto-tune-configs\u0000","version":1,"records":[]}',
    "records_of_numbers": '{"format":"pto-tune-configs","version":1,"records":[1,2,3]}',
    "records_object": '{"format":"pto-tune-configs","version":1,"records":{"a":1}}',
    "records_nested_lists": '{"format":"pto-tune-configs","version":1,"records":[[[]]]}',
}


def top_level_text(fx, name):
    text = TOP_LEVEL_FILES[name]
    good = json.dumps(fx.export_json)
    if name == "bom_then_export":
        return "\ufeff" + good
    if name == "trailing_garbage":
        return good + " }"
    if name == "duplicate_records":
        doc = json.loads(good)
        doc["records"] = doc["records"] * 50
        return json.dumps(doc)
    return text


CSV_VALUES = ["", "-1", "0", "nan", "inf", "1e400", "x" * 10000, "9223372036854775808", "\"1,2\"", "1.5",
              "64x128x128_64x128x64", "\u00e9"]


def csv_text(column, value):
    row = list(CSV_ROW)
    row[column] = value
    return CSV_HEADER + "\n" + ",".join(row) + "\n"


WHOLE_CSV = {
    "empty": "",
    "header_only": CSV_HEADER + "\n",
    "no_header": ",".join(CSV_ROW) + "\n",
    "short_row": CSV_HEADER + "\n1,2\n",
    "long_row": CSV_HEADER + "\n" + ",".join(CSV_ROW + ["x"] * 1000) + "\n",
    "crlf": (CSV_HEADER + "\r\n" + ",".join(CSV_ROW) + "\r\n"),
    "bom": "\ufeff" + CSV_HEADER + "\n" + ",".join(CSV_ROW) + "\n",
    "unterminated_quote": CSV_HEADER + "\n\"1," + ",".join(CSV_ROW[1:]) + "\n",
    "nul": CSV_HEADER + "\n" + ",".join(CSV_ROW).replace("Gemm", "Ge\0mm") + "\n",
    "duplicate_header": CSV_HEADER + "," + CSV_HEADER + "\n" + ",".join(CSV_ROW * 2) + "\n",
    "many_rows": CSV_HEADER + "\n" + "".join(",".join([str(i)] + CSV_ROW[1:]) + "\n" for i in range(5000)),
}


# ---------------------------------------------------------------------------------
# Batch files: one bad entry beside a good one, in both formats and under options. The
# bad entry is named and the run exits 2; without --strict the good entry is tuned.

BAD_BATCH_ENTRIES = {
    # name: (plain line, JSON entry)
    "unknown_op": ("nosuchop 64,64", {"op": "nosuchop", "shapes": "64,64"}),
    "bom_in_op": ("matmul\ufeff 64,64,64", {"op": "\ufeffmatmul", "shapes": "64,64,64"}),
    "too_few_dims": ("matmul 64,64", {"op": "matmul", "shapes": "64,64"}),
    "too_many_dims": ("matmul 64,64,64,64", {"op": "matmul", "shapes": "64,64,64,64"}),
    "zero_dim": ("matmul 0,64,64", {"op": "matmul", "shapes": [0, 64, 64]}),
    "negative_dim": ("matmul -64,64,64", {"op": "matmul", "shapes": [-64, 64, 64]}),
    "dim_2_63": ("matmul 9223372036854775808,1,1", {"op": "matmul", "shapes": [2**63, 1, 1]}),
    "dim_float": ("matmul 64.5,64,64", {"op": "matmul", "shapes": [64.5, 64, 64]}),
    "dim_text": ("matmul a,b,c", {"op": "matmul", "shapes": "a,b,c"}),
    "huge_tensor": ("matmul 4611686018427387904,4611686018427387904,2", {"op": "matmul", "shapes": [2**62, 2**62, 2]}),
    "range_backwards": ("matmul 64..1:pow2,64,64", {"op": "matmul", "shapes": "64..1:pow2,64,64"}),
    # 63 workloads, the large ones hopeless: the target makes them bad before any is tuned
    "range_pow2_to_2_62": ("matmul 1..4611686018427387904:pow2,64,64 target=nosuch",
                           {"op": "matmul", "shapes": "1..4611686018427387904:pow2,64,64", "target": "nosuch"}),
    "range_step_0": ("matmul 1..64:step0,64,64", {"op": "matmul", "shapes": "1..64:step0,64,64"}),
    "range_step_negative": ("matmul 1..64:step-8,64,64", {"op": "matmul", "shapes": "1..64:step-8,64,64"}),
    "range_too_many": ("softmax 1..1000000:step1,64", {"op": "softmax", "shapes": "1..1000000:step1,64"}),
    "product_too_big": ("softmax 1..100000:step1,1..100000:step1", {"op": "softmax", "shapes": "1..100000:step1,1..100000:step1"}),
    "range_near_2_63": ("matmul 9223372036854775000..9223372036854775807:step1,1,1",
                        {"op": "matmul", "shapes": "9223372036854775000..9223372036854775807:step1,1,1"}),
    "range_unknown_kind": ("matmul 1..64:fib,64,64", {"op": "matmul", "shapes": "1..64:fib,64,64"}),
    "unknown_dtype": ("matmul 64,64,64 fp99", {"op": "matmul", "shapes": "64,64,64", "dtype": "fp99"}),
    "unknown_backend": ("matmul 64,64,64 backend=nosuch", {"op": "matmul", "shapes": "64,64,64", "backend": "nosuch"}),
    "npu_backend_without_command": ("matmul 64,64,64 backend=npu", {"op": "matmul", "shapes": "64,64,64", "backend": "npu"}),
    "unknown_target": ("matmul 64,64,64 target=nosuch", {"op": "matmul", "shapes": "64,64,64", "target": "nosuch"}),
    "target_is_a_folder": ("matmul 64,64,64 target=/tmp", {"op": "matmul", "shapes": "64,64,64", "target": "/tmp"}),
    "weight_inf": ("matmul 64,64,64 weight=inf", {"op": "matmul", "shapes": "64,64,64", "weight": "__1e999__"}),
    "weight_zero": ("matmul 64,64,64 weight=0", {"op": "matmul", "shapes": "64,64,64", "weight": 0}),
    "weight_negative": ("matmul 64,64,64 weight=-2", {"op": "matmul", "shapes": "64,64,64", "weight": -2}),
    "weight_text": ("matmul 64,64,64 weight=heavy", {"op": "matmul", "shapes": "64,64,64", "weight": "heavy"}),
    "budget_negative": ("matmul 64,64,64 budget=-1", {"op": "matmul", "shapes": "64,64,64", "budget": -1}),
    "budget_2_64": ("matmul 64,64,64 budget=18446744073709551616", {"op": "matmul", "shapes": "64,64,64", "budget": 2**64}),
    "budget_float": ("matmul 64,64,64 budget=1.5", {"op": "matmul", "shapes": "64,64,64", "budget": 1.5}),
    "bad_attr": ("matmul 64,64,64 transpose_b=maybe", {"op": "matmul", "shapes": "64,64,64", "attrs": {"transpose_b": "maybe"}}),
    "unknown_attr": ("matmul 64,64,64 colour=3", {"op": "matmul", "shapes": "64,64,64", "attrs": {"colour": 3}}),
    "attr_2_70": ("matmul 64,64,64 transpose_b=1180591620717411303424", {"op": "matmul", "shapes": "64,64,64", "attrs": {"transpose_b": 2**70}}),
    "bad_expr": ("elementwise 64,64 expr=mul(a,", {"op": "elementwise", "shapes": "64,64", "expr": "mul(a,"}),
    "deep_expr": ("elementwise 64,64 expr=" + "neg(" * 5000 + "a" + ")" * 5000,
                  {"op": "elementwise", "shapes": "64,64", "expr": "neg(" * 5000 + "a" + ")" * 5000}),
    "huge_value": ("matmul " + "9" * 100000 + ",64,64", {"op": "matmul", "shapes": "9" * 100000 + ",64,64"}),
    "control_chars": ("matmul 64,64,64 \x01\x02\x7f", {"op": "matmul\x01", "shapes": "64,64,64"}),
}

GOOD_BATCH = ("softmax 32,64", {"op": "softmax", "shapes": "32,64"})

BATCH_OPTIONS = {
    "default": [],
    "strict": ["--strict"],
    "jobs2": ["--jobs", "2"],
}


def batch_case(probe, fx, entry, form, option):
    bad_plain, bad_json = BAD_BATCH_ENTRIES[entry]

    def run(folder):
        db = os.path.join(folder, "tune.db")
        if form == "plain":
            file = write_file(folder, "batch.txt", bad_plain + "\n" + GOOD_BATCH[0] + "\n")
        else:
            # 1e999 is JSON (a number past a double), which Python's json would write as Infinity
            file = write_file(folder, "batch.json", json.dumps([bad_json, GOOD_BATCH[1]]).replace('"__1e999__"', "1e999"))
        r = probe.cli(["batch", file, "--backend", "model", "--budget", "2", "--target", TARGET, "--db", db]
                      + BATCH_OPTIONS[option], folder)
        problems = exit_in(r, {2})
        if problems:
            return problems
        if "not valid JSON" in r.err and "1e999" in r.err:
            return []  # the whole file is refused, naming the number
        where = "line 1" if form == "plain" else "entry 0"
        if where not in r.err:
            return [f"the bad entry is not named ({where}): {r.describe()}"]
        if option != "strict":
            count = measurement_count(db)
            if not count:
                return [f"the good entry was not tuned beside the bad one: {r.describe()}"]
        return []
    return run


def special_batch_file(kind):
    def make(folder):
        path = os.path.join(folder, "batch")
        if plant(kind, path) or kind == "missing":
            return path
        if kind == "dev_zero":
            return "/dev/zero"
        if kind == "empty":
            write_file(folder, "batch", "")
        elif kind == "comments_only":
            write_file(folder, "batch", "# nothing\n\n   \n")
        elif kind == "bom_only":
            write_file(folder, "batch", "\ufeff")
        elif kind == "binary":
            write_file(folder, "batch", bytes(range(256)) * 100, "wb")
        elif kind == "json_not_list":
            write_file(folder, "batch", '{"op":"matmul"}')
        elif kind == "json_deep":
            write_file(folder, "batch", "[" * 100000 + "]" * 100000)
        elif kind == "json_broken":
            write_file(folder, "batch", '[{"op":"matmul",')
        elif kind == "huge_line":
            write_file(folder, "batch", "matmul " + "6" * 10_000_000 + "\n")
        elif kind == "repeated_200k":
            write_file(folder, "batch", "softmax 32,64\n" * 200000)
        elif kind == "unreadable":
            write_file(folder, "batch", "softmax 32,64\n")
            os.chmod(path, 0)
        return path
    return make


SPECIAL_BATCHES = {
    # name: allowed exit codes (0 where the file is fine after all)
    "folder": {2}, "fifo": {2}, "dev_zero": {2}, "missing": {2}, "symlink_loop": {2}, "empty": {2},
    "comments_only": {2}, "bom_only": {2}, "binary": {2}, "json_not_list": {2}, "json_deep": {2},
    "json_broken": {2}, "huge_line": {2}, "repeated_200k": {0}, "unreadable": {0, 2},
}


def special_batch_case(probe, kind):
    def run(folder):
        file = special_batch_file(kind)(folder)
        r = probe.cli(["batch", file, "--backend", "model", "--budget", "2", "--target", TARGET,
                       "--db", os.path.join(folder, "tune.db")], folder)
        return exit_in(r, SPECIAL_BATCHES[kind])
    return run


# ---------------------------------------------------------------------------------
# Output paths: what export, run --trace and report write onto. Never a hang (a FIFO
# nobody reads), never the database replaced (an output onto an input), a bad path a
# usage error (2).

def output_target(kind, folder, db, name="out"):
    path = os.path.join(folder, name)
    if plant(kind, path):
        return path
    if kind == "symlink_to_db":
        os.symlink(db, path)
    elif kind == "hardlink_to_db":
        os.link(db, path)
    elif kind == "the_db":
        return db
    elif kind == "missing_folder":
        return os.path.join(folder, "no", "such", "folder", "out")
    elif kind == "under_a_file":
        write_file(folder, "plain", "x")
        return os.path.join(folder, "plain", "out")
    elif kind == "read_only_folder":
        os.mkdir(os.path.join(folder, "ro"))
        os.chmod(os.path.join(folder, "ro"), 0o555)
        return os.path.join(folder, "ro", "out")
    elif kind == "trailing_slash":
        return path + "/"
    elif kind == "long_name":
        return os.path.join(folder, "n" * 300)
    elif kind == "dev_full":
        return "/dev/full"
    return path


# kind: allowed exit codes. A target that can be written (a link, a null device, a
# dangling link whose folder is missing is not) may succeed.
OUTPUT_TARGETS = {
    "folder": {2}, "fifo_unread": {2}, "char_device": {0}, "symlink_to_db": {2}, "hardlink_to_db": {2},
    "the_db": {2}, "missing_folder": {0, 2}, "under_a_file": {2}, "read_only_folder": {0, 2},
    "trailing_slash": {0, 2}, "long_name": {2}, "symlink_loop": {2}, "dangling_symlink": {0, 2}, "socket": {2},
    "dev_full": {1, 2},
}

WRITERS = {
    "export": lambda out, db: ["db", "export", out, "--db", db],
    "trace": lambda out, db: ["run", "--op", "softmax", "--shapes", "64,128", "--backend", "sim", "--target", TARGET,
                              "--trace", out],
    "merge_into": lambda out, db: ["db", "merge", db, "--into", out],
    # report writes report.html and report.md into --out: the target is planted at report.md
    "report": lambda out, db: ["report", "--db", db, "--out", os.path.dirname(out)],
}
# The kinds that are something planted at a name (what report's fixed names can meet).
PLANTED = ("folder", "fifo_unread", "char_device", "symlink_to_db", "hardlink_to_db", "symlink_loop",
           "dangling_symlink", "socket")


def output_case(probe, fx, writer, kind):
    def run(folder):
        db = fx.copy_db(folder)
        before, count_before = digest(db), measurement_count(db)
        if writer == "report":
            report = os.path.join(folder, "report")
            os.mkdir(report)
            target = output_target(kind, report, db, "report.md")
        else:
            target = output_target(kind, folder, db)
        r = probe.cli(WRITERS[writer](target, db), folder, timeout=30)
        allowed = OUTPUT_TARGETS[kind]
        onto_db = kind in ("symlink_to_db", "hardlink_to_db", "the_db")
        if writer == "trace" and onto_db:
            allowed = {0}  # run reads no database: that file is just a file the user named
        if writer == "merge_into" and onto_db:
            allowed = {0}  # merging a database into itself adds nothing
        if writer == "merge_into" and kind == "char_device":
            allowed = {2}  # a device is no database
        problems = exit_in(r, allowed)
        if problems:
            return problems
        if writer in ("export", "report"):  # the database is their input: never written
            return unchanged(db, before, f"{writer} onto {kind}")
        if writer == "merge_into" and onto_db and measurement_count(db) != count_before:
            return [f"merging a database into itself changed its records ({count_before} -> {measurement_count(db)})"]
        return []
    return run


# ---------------------------------------------------------------------------------
# Run and trace options: bad values x the options of run --trace.

RUN_VALUES = {
    "--shapes": ["", "0,0", "-1,128", "9223372036854775807,2", "1e3,128", "64x", "64,,128", "64,128,1"],
    "--repeats": ["0", "-1", "1e9", "x", "99999999999999999999"],
    "--seed": ["-1", "x", "18446744073709551616"],
    "--threads": ["-1", "x", "2147483648"],
    "--config": ["{", "[]", '{"vec":[0,0]}', '{"vec":[64]}', '{"vec":' * 70, "@/nonexistent", "@/dev/zero",
                 '{"vec":[1e400,1]}'],
    "--target": ["nosuch", "/etc/passwd", "/dev/zero", ""],
    "--dtype": ["fp99", "", "FP16 "],
}


def run_case(probe, option, value, trace):
    def run(folder):
        # --threads and --repeats are the cpu backend's (sim ignores them, with a warning)
        cpu = option in ("--threads", "--repeats")
        args = ["run", "--op", "softmax", "--shapes", "64,128", "--backend", "cpu" if cpu else "sim",
                "--target", "host" if cpu else TARGET]
        if trace:
            args += ["--trace", os.path.join(folder, "t.json")]
        i = args.index(option) if option in args else -1
        if i >= 0:
            args[i + 1] = value
        else:
            args += [option, value]
        r = probe.cli(args, folder, timeout=30)
        return exit_in(r, {2})
    return run


# ---------------------------------------------------------------------------------
# Python: bad arguments x the package's functions. Each runs in its own interpreter, so
# a crash is seen as one.

PY_PRELUDE = """
import os, pathlib, sys, warnings
warnings.simplefilter("ignore")
import pto_tune
DB = {db!r}
def expect_documented(f):
    try:
        f()
    except (pto_tune.Error, TypeError):
        pass
"""

PY_ARGUMENT_VALUES = {
    "op": ["None", "1", "''", "'nosuch'", "'matmul\\x00'", "'x' * 1000000", "b'matmul'"],
    "shapes": ["None", "[]", "[0, 0, 0]", "[-1, 64, 64]", "[2**63, 1, 1]", "[1.5, 64, 64]", "'a,b,c'", "[[64]]",
               "{'a': 1}", "[True, 64, 64]", "'9' * 100000", "[float('nan'), 1, 1]", "iter([64, 64, 64])",
               "[2**62, 2**62, 2]"],
    "dtype": ["None", "''", "'fp99'", "1"],
    "target": ["''", "'nosuch'", "'/etc/passwd'", "'/dev/zero'", "1"],
    "backend": ["''", "'nosuch'", "1"],
    "db": ["1", "b'x.db'", "''", "'missing/folder/x.db'", "'/'", "'/dev/null'", "pathlib.Path('/')",
           "'x' * 5000"],
    "attrs": ["{'transpose_b': 2**70}", "{1: 2}", "[]", "{'colour': 1}", "{'transpose_b': 'yes'}", "{'transpose_b': None}"],
    "expr": ["'mul(a,'", "'neg(' * 10000 + 'a' + ')' * 10000", "1"],
}

PY_FUNCTIONS = {
    "lookup": "pto_tune.lookup({op}, {shapes}, dtype={dtype}, target={target}, backend={backend}, db={db}, "
              "attrs={attrs}, expr={expr})",
    "emit_pypto": "pto_tune.emit_pypto({op}, {shapes}, '{{\"vec\":[8,128]}}', dtype={dtype}, target={target}, "
                  "attrs={attrs}, expr={expr})",
    "database_best": "pto_tune.Database({db}).best({op}, {shapes}, dtype={dtype}, target={target}, backend={backend}, "
                     "attrs={attrs}, expr={expr})",
}

PY_DEFAULTS = {"op": "'softmax'", "shapes": "[64, 128]", "dtype": "'fp16'", "target": f"'{TARGET}'",
               "backend": "None", "db": "DB", "attrs": "None", "expr": "None"}

PY_DATABASE_CALLS = {
    "records_unknown_op": "list(pto_tune.Database(DB).records('nosuch'))",
    "records_op_int": "list(pto_tune.Database(DB).records(5))",
    "export_onto_itself": "pto_tune.Database(DB).export(DB)",
    "export_onto_folder": "pto_tune.Database(DB).export('/')",
    "export_onto_fifo": "os.mkfifo('fifo'); pto_tune.Database(DB).export('fifo')",
    "import_missing": "pto_tune.Database(DB).import_json('/nonexistent.json')",
    "import_itself": "pto_tune.Database(DB).import_json(DB)",
    "import_dev_zero": "pto_tune.Database(DB).import_json('/dev/zero')",
    "commit_not_a_list": "pto_tune.Database(DB).commit(5)",
    "commit_strings": "pto_tune.Database(DB).commit(['x'])",
    "commit_empty_record": "pto_tune.Database(DB).commit([{}])",
    "commit_none": "pto_tune.Database(DB).commit(iter([None]))",
    "commit_deep": "deep = []; [deep := [deep] for _ in range(5000)]; pto_tune.Database(DB).commit([deep])",
    "merge_itself": "pto_tune.Database(DB).merge([DB])",
    "merge_missing": "pto_tune.Database(DB).merge(['/nonexistent.db'])",
    "merge_not_paths": "pto_tune.Database(DB).merge([1, 2])",
    "merge_string": "pto_tune.Database(DB).merge('abc')",
    "reload_folder": "pto_tune.reload(db='/')",
    "tune_budget_negative": "pto_tune.tune('softmax', [64, 128], backend='model', budget=-1, db=DB)",
    "tune_time_nan": "pto_tune.tune('softmax', [64, 128], backend='model', time_limit=float('nan'), db=DB)",
    "tune_measure_raises": "pto_tune.tune('softmax', [64, 128], budget=2, db=DB, measure=lambda c: 1/0)",
    "tune_measure_nan": "pto_tune.tune('softmax', [64, 128], budget=2, db=DB, measure=lambda c: float('nan'))",
    "tune_measure_string": "pto_tune.tune('softmax', [64, 128], budget=2, db=DB, measure=lambda c: 'fast')",
    "tune_seed_negative": "pto_tune.tune('softmax', [64, 128], backend='model', budget=2, seed=-1, db=DB)",
    "run_bad_config": "pto_tune.run('softmax', [64, 128], '{\"vec\":[4096,4096]}', backend='model')",
    "config_deep": "pto_tune.Config('{\"vec\":' * 100 + '1' + '}' * 100)",
    "config_huge": "pto_tune.Config({'vec': [2**64, 1]})",
    "apply_not_config": "pto_tune.apply(5, None)",
}


def python_case(probe, fx, code, corrupt_db=False):
    def run(folder):
        db = fx.copy_db(folder)
        if corrupt_db:
            overwrite_at(100, b"\xa5" * 300)(db)
        before = digest(db)
        script = PY_PRELUDE.format(db=db) + f"expect_documented(lambda: {code})\n" if "; " not in code else \
            PY_PRELUDE.format(db=db) + "def f():\n    " + code.replace("; ", "\n    ") + "\nexpect_documented(f)\n"
        r = probe.python(script, folder)
        problems = signal_or_hang(r)
        if problems:
            return problems
        if r.rc != 0:
            return [f"raised what it does not document, or failed: {r.err[-600:]}\n    code: {code[:200]}"]
        if "import" not in code and "commit" not in code and "merge" not in code and "tune" not in code:
            return unchanged(db, before, code[:60])
        return []
    return run


# ---------------------------------------------------------------------------------

def all_cases(probe, fx):
    cases = {}
    for variant in BAD_DATABASES:
        for command in DB_COMMANDS:
            cases[f"db/{variant}/{command}"] = db_case(probe, fx, variant, command)
    record = fx.export_json["records"][0]
    for path in leaf_paths(record):
        for hostile in HOSTILE_VALUES:
            name = "/".join(map(str, path))

            def make(folder, path=path, hostile=hostile):
                doc = json.loads(json.dumps(fx.export_json))
                doc["records"] = [mutated(record, path, hostile)]
                return write_file(folder, "in.json", json.dumps(doc))
            cases[f"export_record/{name}/{hostile}"] = import_case(probe, fx, make, export_import)
    for member in ("format", "version", "records", "compiler", "cost_model"):
        for hostile in HOSTILE_VALUES:
            def make(folder, member=member, hostile=hostile):
                return write_file(folder, "in.json", json.dumps(mutated(fx.export_json, (member,), hostile)))
            cases[f"export_file/{member}/{hostile}"] = import_case(probe, fx, make, export_import)
    for name in TOP_LEVEL_FILES:
        cases[f"export_file/whole/{name}"] = import_case(
            probe, fx, lambda folder, name=name: write_file(folder, "in.json", top_level_text(fx, name)), export_import)
    for column, header in enumerate(CSV_HEADER.split(",")):
        for i, value in enumerate(CSV_VALUES):
            cases[f"csv/{header}/{i}"] = import_case(
                probe, fx, lambda folder, c=column, v=value: write_file(folder, "m.csv", csv_text(c, v)), csv_import)
    for name, text in WHOLE_CSV.items():
        cases[f"csv/whole/{name}"] = import_case(
            probe, fx, lambda folder, t=text: write_file(folder, "m.csv", t), csv_import)
    for entry in BAD_BATCH_ENTRIES:
        for form in ("plain", "json"):
            for option in BATCH_OPTIONS:
                cases[f"batch/{entry}/{form}/{option}"] = batch_case(probe, fx, entry, form, option)
    for kind in SPECIAL_BATCHES:
        cases[f"batch_file/{kind}"] = special_batch_case(probe, kind)
    for writer in WRITERS:
        for kind in (PLANTED if writer == "report" else OUTPUT_TARGETS):
            cases[f"output/{writer}/{kind}"] = output_case(probe, fx, writer, kind)
    for option, values in RUN_VALUES.items():
        for i, value in enumerate(values):
            for trace in (False, True) if option not in ("--threads", "--repeats") else (False,):
                cases[f"run/{option.lstrip('-')}/{i}/{'trace' if trace else 'plain'}"] = run_case(probe, option, value, trace)
    if probe.python_ok:
        for function, template in PY_FUNCTIONS.items():
            for argument, values in PY_ARGUMENT_VALUES.items():
                for i, value in enumerate(values):
                    args = dict(PY_DEFAULTS, **{argument: value})
                    cases[f"python/{function}/{argument}/{i}"] = python_case(probe, fx, template.format(**args))
        for name, code in PY_DATABASE_CALLS.items():
            cases[f"python/database/{name}"] = python_case(probe, fx, code)
            cases[f"python/database_corrupt/{name}"] = python_case(probe, fx, code, corrupt_db=True)
    return cases


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(root, "build", "cli", "pto-tune"))
    parser.add_argument("--pythonpath", default=os.path.join(root, "build", "python"))
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--all", action="store_true")
    mode.add_argument("--sample", type=int, metavar="N", help="a fixed sample of N cases, spread over the groups")
    mode.add_argument("--only", metavar="GLOB")
    mode.add_argument("--list", action="store_true")
    parser.add_argument("--seed", type=int, default=31, help="of the sample")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--progress", action="store_true", help="say every 100 cases how far it is")
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="probe-hostile-")
    started = time.monotonic()
    try:
        probe = Probe(os.path.abspath(args.bin), os.path.abspath(args.pythonpath), scratch)
        fx = Fixtures(probe)
        cases = all_cases(probe, fx)
        names = sorted(cases)
        if args.list:
            print("\n".join(names))
            print(f"{len(names)} cases", file=sys.stderr)
            return 0
        if args.only:
            names = [n for n in names if fnmatch.fnmatch(n, args.only)]
        elif args.sample is not None:
            names = sorted(random.Random(args.seed).sample(names, min(args.sample, len(names))))
        failures = []
        for n, name in enumerate(names):
            if args.progress and n % 100 == 0:
                print(f"... {n} of {len(names)} ({time.monotonic() - started:.0f} s)", flush=True)
            folder = tempfile.mkdtemp(prefix="case-", dir=scratch)
            try:
                problems = cases[name](folder)
            except Exception as e:  # the probe's own failure to set a case up is a failure too
                problems = [f"probe error: {type(e).__name__}: {e}"]
            if problems:
                failures.append((name, problems))
                print(f"FAIL {name}\n    " + "\n    ".join(problems), flush=True)
            subprocess.run(["chmod", "-R", "u+rwx", folder], check=False)
            shutil.rmtree(folder, ignore_errors=True)
        skipped = "" if probe.python_ok else " (Python cases skipped: pto_tune cannot be imported)"
        print(f"probe_hostile: {len(names)} cases of {len(cases)}, {len(failures)} failed, "
              f"{time.monotonic() - started:.0f} s{skipped}")
        return 1 if failures else 0
    finally:
        if args.keep:
            print(f"scratch kept: {scratch}")
        else:
            subprocess.run(["chmod", "-R", "u+rwx", scratch], check=False)
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
