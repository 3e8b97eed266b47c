"""What advice reads of each estimate is kept on disk (sizing.estimatecache), so that a later
process's first ranking reads it instead of sizing: the same rankings, bit for bit, and sized
afresh whenever the code, the data or the workload changes, or the file is not readable."""

from __future__ import annotations

import hashlib
import marshal
import math
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from priceadvisor.cli.app import main
from priceadvisor.config import WorkloadProfile
from priceadvisor.resources import providers_dir
from priceadvisor.sizing import advisor, estimatecache
from priceadvisor.sizing.estimate import Workload
from priceadvisor.sizing.workloads import to_workload
from priceadvisor.store import connections

PROFILES = [
    WorkloadProfile(name="chat", task="serve", model="llama-3.1-70b", precision="fp8"),
    WorkloadProfile(name="tuned", task="lora", model="llama-3.1-8b", train_tokens=2e8),
    WorkloadProfile(name="jobs", task="batch", model="qwen2.5-7b", concurrency=None),
]


@pytest.fixture(scope="module")
def offline_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("estimates") / "a.duckdb"
    with pytest.raises(SystemExit):
        main(["--db", str(db), "fetch", "--offline"])
    return db


@pytest.fixture
def new_process() -> Iterator[None]:
    """As in a new process: nothing sized in memory yet (before and after the test)."""
    advisor._memo.clear()
    yield
    advisor._memo.clear()


class Sizings:
    """Counts the shapes sized in the process (advisor._size, one shape, and advisor._size_all,
    a workload's: the estimate or, for serving with the layout left to sizing, its figures)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real, real_all = advisor._size, advisor._size_all

        def counted(*args: Any) -> advisor.Sized | None:
            self.count += 1
            return real(*args)

        def counted_all(profile: Any, work: Any, shapes: list[Any]) -> list[Any]:
            self.count += len(shapes)
            return real_all(profile, work, shapes)

        monkeypatch.setattr(advisor, "_size", counted)
        monkeypatch.setattr(advisor, "_size_all", counted_all)


def ranking(db: Path, profiles: list[WorkloadProfile] = PROFILES) -> list[tuple[Any, ...]]:
    """A first ranking in a new process (the memo emptied), every column but the moment."""
    advisor._memo.clear()
    with connections.reader(db) as con:
        names, rows = advisor.rank(con, profiles, keep=20)
    moment = names.index("computed_at")
    return [row[:moment] + row[moment + 1 :] for row in rows]


def test_a_later_process_ranks_from_the_cache_with_the_same_rows(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizings = Sizings(monkeypatch)
    first = ranking(offline_db)
    assert sizings.count > 0 and len(first) > 20
    assert len(list(estimatecache.folder().glob("*.est"))) == len(PROFILES)
    sizings.count = 0
    assert repr(ranking(offline_db)) == repr(first)  # every column, floats to the last bit
    assert sizings.count == 0


def test_changed_code_or_data_sizes_afresh(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = ranking(offline_db)
    old = estimatecache.folder()
    monkeypatch.setattr(estimatecache, "inputs_digest", lambda: "a-changed-sizing-module")
    sizings = Sizings(monkeypatch)
    assert repr(ranking(offline_db)) == repr(first)
    assert sizings.count > 0 and estimatecache.folder() != old
    assert old.is_dir()  # another install may still use it


def test_the_digest_follows_the_sizing_code(monkeypatch: pytest.MonkeyPatch) -> None:
    estimatecache.inputs_digest.cache_clear()
    before = estimatecache.inputs_digest()
    estimatecache.inputs_digest.cache_clear()
    monkeypatch.setattr(estimatecache.scalecache, "inputs_digest", lambda: "other code")
    try:
        assert estimatecache.inputs_digest() != before
    finally:
        estimatecache.inputs_digest.cache_clear()


def test_a_changed_workload_is_sized_afresh(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranking(offline_db)
    sizings = Sizings(monkeypatch)
    changed = PROFILES[0].model_copy(update={"precision": "bf16"})
    rows = ranking(offline_db, [changed])
    assert sizings.count > 0
    sizings.count = 0
    assert repr(ranking(offline_db, [changed])) == repr(rows) and sizings.count == 0


def test_the_key_reads_every_field_of_the_sizing_input() -> None:
    work = to_workload(PROFILES[0])
    keys = {
        estimatecache.workload_key(work, None),
        estimatecache.workload_key(work, 2),
        estimatecache.workload_key(Workload(**{**_fields(work), "input_tokens": 1001}), None),
        estimatecache.workload_key(Workload(**{**_fields(work), "scales": work.scales}), None),
    }
    assert len(keys) == 3  # the last is the same input: the same key


def _fields(work: Workload) -> dict[str, Any]:
    return {name: getattr(work, name) for name in Workload.__dataclass_fields__}


def signed(value: Any) -> bytes:
    """A file of the cache's format (its body's digest, then the body) holding `value`: what
    passes the digest and must still be checked row by row. Bytes are taken as the body."""
    body = value if isinstance(value, bytes) else marshal.dumps(value)
    return hashlib.sha256(body).digest()[: estimatecache._CHECK] + body


ROW = (1.5, ("H100-SXM-80GB", 1.0, 2.0, None, 2.0, 3.0, "memory", 0.1), 2.0, 3)
GARBAGE: list[Callable[[bytes], bytes]] = [
    lambda data: b"",
    lambda data: data[:-1],  # cut short
    lambda data: data[:40] + bytes([data[40] ^ 1]) + data[41:],  # one bit flipped
    lambda data: data[: estimatecache._CHECK] + b"\x00" * (len(data) - estimatecache._CHECK),
    lambda data: b'{"H100-SXM-80GB\\t1.0": null}',  # what earlier versions wrote
    lambda data: signed(b"not marshal"),
    lambda data: signed(b"\xff" + data[estimatecache._CHECK + 1 :]),  # a bad type code
    lambda data: signed([]),
    lambda data: signed({"x": None}),
    lambda data: signed({("H100", 1.0, 2): None}),
    lambda data: signed({("H100", 1): None}),  # an int count: not what is written
    lambda data: signed({("H100", math.nan): None}),
    lambda data: signed({("H100", 1.0): (1.0,)}),
    lambda data: signed({("H100", 1.0): [1.0, ["x"], 2.0, 3]}),  # lists: not what is written
    lambda data: signed({("H100", 1.0): (1.0, ("x",), 2.0, 3)}),
]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_an_unreadable_file_is_sized_again_and_rewritten(
    offline_db: Path,
    new_process: None,
    monkeypatch: pytest.MonkeyPatch,
    garbage: Callable[[bytes], bytes],
) -> None:
    first = ranking(offline_db)
    for path in estimatecache.folder().glob("*.est"):
        path.write_bytes(garbage(path.read_bytes()))
        assert estimatecache.read(path.stem) == {}
    sizings = Sizings(monkeypatch)
    assert repr(ranking(offline_db)) == repr(first) and sizings.count > 0
    sizings.count = 0
    assert repr(ranking(offline_db)) == repr(first) and sizings.count == 0


def test_every_digest_names_the_format_and_the_python() -> None:
    """The files of another format or of another Python's marshal go to another folder."""
    assert estimatecache._FORMAT.startswith(f"marshal {marshal.version} ")
    assert sys.implementation.cache_tag in estimatecache._FORMAT


def test_a_read_only_cache_folder_is_not_used(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if os.geteuid() == 0:
        monkeypatch.setattr(estimatecache, "folder", lambda: tmp_path / "a-file" / "below")
        (tmp_path / "a-file").write_text("not a folder")  # as unwritable as it gets for root
    else:
        estimatecache.folder().parent.mkdir(parents=True, exist_ok=True)
        estimatecache.folder().parent.chmod(0o500)
    first = ranking(offline_db)
    sizings = Sizings(monkeypatch)
    assert repr(ranking(offline_db)) == repr(first) and sizings.count > 0


def test_kept_figures_read_back_to_the_same_bits(new_process: None) -> None:
    """Every field of every shape, NaN and None included, as `_size` made it."""
    shapes = [
        (model, count)
        for model in ("H100-SXM-80GB", "A100-SXM-80GB", "L4-24GB")
        for count in (1.0, 8.0)
    ]
    for profile in PROFILES:
        work = to_workload(profile)
        key = estimatecache.workload_key(work, profile.tensor_parallel)
        made = {shape: advisor._size(profile, work, *shape) for shape in shapes}
        made[("T4-16GB", 0.5)] = advisor.Sized(
            math.nan, ("T4-16GB", 0.5, 1.5, None, None, 2.0, "x", 0.1), 1.5, 1
        )
        estimatecache.write(key, made)
        assert repr(estimatecache.read(key)) == repr(made)


@pytest.mark.parametrize("odd", [np.float64(2.0), Fraction(2)])
def test_figures_marshal_does_not_keep_as_they_were_are_sized_again(odd: object) -> None:
    """marshal writes a float exactly as float, not its subclasses: numpy's float64 would read
    back as its bytes (the column check refuses the row) and a Fraction is not written at all.
    Either way the next process sizes again; never an error."""
    fields = ("H100", 1.0, odd, None, 2.0, 3.0, "x", 0.1)
    estimatecache.write("w", {("H100", 1.0): advisor.Sized(1.5, fields, 2.0, 1)})
    assert estimatecache.read("w") == {}


def test_folders_of_other_versions_beyond_the_kept_ones_are_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Path] = []
    for n in range(estimatecache.KEEP + 3):
        monkeypatch.setattr(estimatecache, "inputs_digest", lambda n=n: f"version-{n}")
        estimatecache.write("w", {("H100", 1.0): None})
        made.append(estimatecache.folder())
        os.utime(made[-1], (n, n))  # used in this order
    kept = sorted(made[0].parent.glob("estimates-*"))
    assert len(kept) == estimatecache.KEEP + 1 and made[-1] in kept and made[0] not in kept


def test_a_folder_keeps_the_most_recently_used_workload_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(estimatecache, "MAX_FILES", 3)
    for n in range(5):
        estimatecache.write(f"w{n}", {("H100", 1.0): None})
        os.utime(estimatecache.folder() / f"w{n}.est", (n, n))
    assert estimatecache.read("w0") == {}
    assert estimatecache.read("w4") == {("H100", 1.0): None}
    assert len(list(estimatecache.folder().glob("*.est"))) == 3


def test_shapes_new_to_a_workload_are_sized_and_added_to_its_file(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New GPU models among the offers: only those are sized; the file then holds them all."""
    first = ranking(offline_db, PROFILES[:1])
    [path] = estimatecache.folder().glob("*.est")
    kept = estimatecache.read(path.stem)
    dropped = sorted(kept)[::3]
    estimatecache.write(path.stem, {s: k for s, k in kept.items() if s not in dropped})
    sizings = Sizings(monkeypatch)
    assert repr(ranking(offline_db, PROFILES[:1])) == repr(first)
    assert sizings.count == len(dropped)
    assert repr(sorted(estimatecache.read(path.stem).items())) == repr(sorted(kept.items()))


def test_a_write_left_half_done_is_removed_once_stale() -> None:
    """A process killed between writing its temporary file and renaming it leaves a `.part`."""
    estimatecache.write("w0", {("H100-SXM-80GB", 1.0): None})
    stale = estimatecache.folder() / ".tmp-killed.part"
    recent = estimatecache.folder() / ".tmp-writing.part"
    for path in (stale, recent):
        path.write_text("{")
    os.utime(stale, (1, 1))
    estimatecache.write("w1", {("H100-SXM-80GB", 1.0): None})
    assert not stale.exists() and recent.exists()  # another process may be writing that one


def test_the_digest_follows_the_gpu_catalog_and_the_workload_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    providers = tmp_path / "providers"
    providers.mkdir()
    shutil.copy(providers_dir() / "gpus.toml", providers / "gpus.toml")
    rules = tmp_path / "workload.py"
    shutil.copy(str(estimatecache.workload_module.__file__), rules)
    monkeypatch.setattr(estimatecache.scalecache, "providers_dir", lambda: providers)
    monkeypatch.setattr(estimatecache, "workload_module", SimpleNamespace(__file__=str(rules)))
    digests = []
    for changed in (None, providers / "gpus.toml", rules):
        if changed:
            with changed.open("a") as file:
                file.write("\n# one more line\n")
        estimatecache.inputs_digest.cache_clear()
        digests.append(estimatecache.inputs_digest())
    estimatecache.inputs_digest.cache_clear()
    assert len(set(digests)) == 3


@pytest.mark.parametrize(
    "row",
    [
        (1, ("H100-SXM-80GB", 1.0, "fast", None, 2.0, 3.0, "memory", 0.1), 2.0, 3),
        (1, ("H100-SXM-80GB", 1.0, 2.0, None, 2.0, 3.0, "memory"), 2.0, 3),
        (1, ("H100-SXM-80GB", 1.0, 2.0, None, 2.0, 3.0, "memory", 0.1), 2.0, True),
        (1, ("H100-SXM-80GB", 1.0, 2.0, None, 2.0, 3.0, "memory", 0.1), "2", 3),
        (None, ("H100-SXM-80GB", 1.0, 2.0, None, 2.0, 3.0, "memory", 0.1), 2.0, 3),
        (1, ("H100-SXM-80GB", 1.0, 2.0, None, 2.0, 3.0, "memory", 0.1), 2.0, 3, 4),
        (1, ("H100-SXM-80GB", True, 2.0, None, 2.0, 3.0, "memory", 0.1), 2.0, 3),
    ],
)
def test_a_row_not_in_the_written_shape_makes_the_file_unread(row: tuple[Any, ...]) -> None:
    estimatecache.write("w", {("H100-SXM-80GB", 1.0): None})
    path = estimatecache.folder() / "w.est"
    path.write_bytes(signed({("H100-SXM-80GB", 1.0): ROW}))
    assert estimatecache.read("w")[("H100-SXM-80GB", 1.0)] == advisor.Sized(*ROW)
    path.write_bytes(signed({("H100-SXM-80GB", 1.0): ROW, ("H100-SXM-80GB", 8.0): row}))
    assert estimatecache.read("w") == {}


def test_a_ranking_tidies_the_cache_once_after_writing_its_files(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold ranking writes a file per workload and keeps the folder within MAX_FILES once,
    after them (not per file)."""
    tidied = []
    real = estimatecache.tidy_up
    monkeypatch.setattr(estimatecache, "tidy_up", lambda: tidied.append(real()))
    monkeypatch.setattr(estimatecache, "MAX_FILES", 2)
    ranking(offline_db)
    assert len(tidied) == 1
    assert len(list(estimatecache.folder().glob("*.est"))) == 2
    monkeypatch.setattr(estimatecache, "MAX_FILES", 3)
    ranking(offline_db)  # the file trimmed away is written again, then tidied once more
    assert len(tidied) == 2
    ranking(offline_db)  # every file read from the cache: nothing written, nothing tidied
    assert len(tidied) == 2
    assert len(list(estimatecache.folder().glob("*.est"))) == 3


def test_workloads_of_one_sizing_input_keep_every_shape_in_their_file(
    offline_db: Path, new_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workloads that differ only in their constraints share a file: the second adds its
    shapes to what the first wrote in the same ranking (the ranking lists the folder once,
    before either file exists), so a later process sizes neither."""
    one_gpu = PROFILES[0].model_copy(update={"name": "one-gpu", "max_gpus": 1})
    with connections.reader(offline_db) as con:
        [(provider,)] = con.execute(
            "SELECT provider FROM offers WHERE gpu_count > 1 GROUP BY provider "
            "ORDER BY count(DISTINCT gpu_model) DESC LIMIT 1"
        ).fetchall()
    one_provider = PROFILES[0].model_copy(update={"name": "one-provider", "providers": [provider]})
    profiles = [one_gpu, one_provider]
    first = ranking(offline_db, profiles)
    [path] = estimatecache.folder().glob("*.est")
    shapes = set(estimatecache.read(path.stem))
    assert any(count == 1.0 for _, count in shapes) and any(count > 1 for _, count in shapes)
    sizings = Sizings(monkeypatch)
    assert repr(ranking(offline_db, profiles)) == repr(first) and sizings.count == 0
