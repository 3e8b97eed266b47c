"""The fitted calibration scales are fitted once per set of inputs and read from the user cache
folder by later processes: the same scales, without the leave-one-source-out fits that were most
of the first `advise` of every process."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from priceadvisor.resources import sizing_data_dir
from priceadvisor.sizing import calibration, scalecache
from priceadvisor.sizing import estimate as sizing


@pytest.fixture(scope="module")
def fitted() -> sizing.Scales:
    return calibration.fit_scales()


@pytest.fixture
def fresh_process() -> Iterator[None]:
    """As in a new process: nothing fitted in memory yet."""
    calibration.fitted_scales.cache_clear()
    yield
    calibration.fitted_scales.cache_clear()


def refuse_to_fit(*_: object) -> sizing.Scales:
    raise AssertionError("fitted again although the cache holds the scales")


def test_a_later_process_reads_the_scales_instead_of_fitting(
    fresh_process: None, fitted: sizing.Scales, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert calibration.fitted_scales() == fitted  # the first process fits and stores
    assert scalecache.cache_path().is_file()
    calibration.fitted_scales.cache_clear()
    monkeypatch.setattr(calibration, "fit", refuse_to_fit)
    assert calibration.fitted_scales() == fitted


def test_changed_inputs_fit_anew_and_keep_the_other_file(
    fitted: sizing.Scales, monkeypatch: pytest.MonkeyPatch
) -> None:
    scalecache.load_or_fit(lambda: fitted)
    old = scalecache.cache_path()
    monkeypatch.setattr(scalecache, "inputs_digest", lambda: "a-changed-case-or-code")
    calls: list[int] = []

    def fit() -> sizing.Scales:
        calls.append(1)
        return fitted

    assert scalecache.load_or_fit(fit) == fitted and calls == [1]
    assert scalecache.cache_path().is_file() and old.is_file()  # another install may use it


def test_only_the_least_recently_used_files_are_removed(
    fitted: sizing.Scales, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two installs under one user each keep their file however many others come and go."""
    paths = []
    for n in range(scalecache.KEEP + 3):
        monkeypatch.setattr(scalecache, "inputs_digest", lambda n=n: f"install-{n}")
        scalecache.load_or_fit(lambda: fitted)
        paths.append(scalecache.cache_path())
        if n:  # the first install runs again between each of the others
            monkeypatch.setattr(scalecache, "inputs_digest", lambda: "install-0")
            os.utime(paths[0], (1, 1))  # as if long unused, until this read marks it
            assert scalecache.load_or_fit(refuse_to_fit) == fitted
    kept = sorted(p.name for p in paths[0].parent.glob("calibration-*.json"))
    assert len(kept) == scalecache.KEEP + 1
    assert paths[0].name in kept and paths[-1].name in kept


@pytest.mark.parametrize("garbage", ["", "{", '{"factors": 3}', '{"factors": {"decode": "x"}}'])
def test_a_damaged_cache_file_is_fitted_over(fitted: sizing.Scales, garbage: str) -> None:
    path = scalecache.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(garbage)
    assert scalecache.load_or_fit(lambda: fitted) == fitted
    assert scalecache.load_or_fit(refuse_to_fit) == fitted  # and stored whole this time


def test_the_digest_follows_the_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "sizing-data"
    shutil.copytree(sizing_data_dir(), copy)
    monkeypatch.setattr(scalecache, "sizing_data_dir", lambda: copy)
    before = scalecache.inputs_digest()
    with (copy / "calibration.toml").open("a") as cases:
        cases.write("\n# one more line\n")
    assert scalecache.inputs_digest() != before
