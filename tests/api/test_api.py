"""The Python API answers as the CLI does: the same rows for the same filters, the same one-line
refusals, read-only connections closed after each call, conversions that say what is missing."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import priceadvisor.api as pa
from tests.conftest import cli


def _json(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> list[dict[str, Any]]:
    code, out, err = cli(capsys, "--db", str(db), *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _plain(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API's typed rows as the CLI's JSON writes them."""
    return json.loads(json.dumps(records, default=str))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ([], {}),
        (["--gpu", "H100", "--pricing", "spot"], {"gpu": "H100", "pricing": "spot"}),
        (["--country", "Germany"], {"country": "Germany"}),
        (["--continent", "EU", "--sort", "hour", "--limit", "7"],
         {"continent": "EU", "sort": "hour", "limit": 7}),
        (["--eu", "--gpu", "A100*"], {"eu": True, "gpu": "A100*"}),
        (["-p", "aws", "-p", "azure", "--include-derived"],
         {"provider": ["aws", "azure"], "include_derived": True}),
        (["-p", "oracle", "--include-derived"], {"provider": "oracle", "include_derived": True}),
        (["--gpu", "MI300X", "--include-flagged"], {"gpu": "MI300X", "include_flagged": True}),
        (["--pricing", "market"], {"pricing": "market"}),
    ],
)  # fmt: skip
def test_offers_are_the_rows_prices_lists(
    capsys: pytest.CaptureFixture[str],
    recorded: tuple[Path, Path],
    args: list[str],
    kwargs: dict[str, Any],
) -> None:
    _, db = recorded
    expected = _json(capsys, db, "prices", *args)
    got = pa.open(db=db).offers(**kwargs)
    assert expected  # every filter here matches recorded offers
    assert _plain(got.records()) == expected
    assert got.columns == list(expected[0])


def test_names_and_codes_filter_alike(recorded: tuple[Path, Path]) -> None:
    data = pa.open(db=recorded[1])
    assert data.offers(country="DE").rows() == data.offers(country="germany").rows()
    assert data.offers(continent="Europe").rows() == data.offers(continent="eu").rows()


def test_history_is_what_history_lists(
    capsys: pytest.CaptureFixture[str], recorded: tuple[Path, Path]
) -> None:
    _, db = recorded
    expected = _json(capsys, db, "history", "--gpu", "A100", "-p", "aws", "--limit", "20")
    got = pa.open(db=db).history("A100", provider="aws", limit=20)
    assert len(expected) == 20
    keys = ("provider", "region", "instance_type", "pricing", "price_hour_usd")
    assert [tuple(r[k] for k in keys) for r in got.records()] == [
        tuple(r[k] for k in keys) for r in expected
    ]
    region = expected[0]["region"]
    assert {r["region"] for r in pa.open(db=db).history(region=region).records()} == {region}


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (["--country", "Atlantis"], {"country": "Atlantis"}),
        (["--continent", "Atlantis"], {"continent": "Atlantis"}),
        (["--gpu", "ZZ9000"], {"gpu": "ZZ9000"}),
        (["--pricing", "sometimes"], {"pricing": "sometimes"}),
        (["-p", "nope"], {"provider": "nope"}),
        (["--sort", "colour"], {"sort": "colour"}),
    ],
)
def test_bad_filters_get_the_cli_s_one_line_error(
    capsys: pytest.CaptureFixture[str],
    recorded: tuple[Path, Path],
    args: list[str],
    kwargs: dict[str, Any],
) -> None:
    _, db = recorded
    code, _, err = cli(capsys, "--db", str(db), "prices", *args)
    assert code == 2
    with pytest.raises(pa.PriceDataError) as raised:
        pa.open(db=db).offers(**kwargs)
    assert err.strip() == f"error: {raised.value}"
    assert "\n" not in str(raised.value)


def test_out_of_range_limits_and_bad_config_are_refused(
    tmp_path: Path, recorded: tuple[Path, Path]
) -> None:
    data = pa.open(db=recorded[1])
    with pytest.raises(pa.PriceDataError, match="limit 0 is not in the range"):
        data.offers(limit=0)
    with pytest.raises(pa.PriceDataError, match="top 101 is not in the range 1 to 100"):
        data.advice(top=101)
    bad = tmp_path / "bad.toml"
    bad.write_text("[readers]\nsql_timeout = 'soon'\n")
    with pytest.raises(pa.PriceDataError, match="sql_timeout"):
        pa.open(config=bad)
    with pytest.raises(pa.PriceDataError, match="no database at"):
        pa.open(db=tmp_path / "missing.duckdb").offers()


def test_open_reads_the_environment_as_the_cli_does(
    monkeypatch: pytest.MonkeyPatch, recorded: tuple[Path, Path]
) -> None:
    config, db = recorded
    monkeypatch.setenv("PRICEADVISOR_DB", str(db))
    monkeypatch.setenv("PRICEADVISOR_CONFIG", str(config))
    data = pa.open()
    assert data.store.where == db
    assert [w.name for w in data.settings.workloads] == ["chat-8b", "lora-8b"]


def _can_write(db: Path) -> bool:
    """Whether another process can open the file read-write now (no lock of ours on it)."""
    probe = f"import duckdb; duckdb.connect({str(db)!r}).close()"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def test_each_call_closes_its_connection_and_a_session_holds_one(
    tmp_path: Path, recorded: tuple[Path, Path]
) -> None:
    db = tmp_path / "copy.duckdb"
    shutil.copy(recorded[1], db)
    data = pa.open(db=db)
    assert len(data.offers(limit=5)) == 5
    assert _can_write(db)
    with data.session():
        first = data.offers(gpu="H100").rows()
        assert data.sql("select count(*) from offers").rows()[0][0] > 0
        assert not _can_write(db)  # the session's one reader holds the file
        assert data.offers(gpu="H100").rows() == first
    assert _can_write(db)


def test_sql_is_read_only(recorded: tuple[Path, Path]) -> None:
    import duckdb

    data = pa.open(db=recorded[1])
    assert data.sql("select count(*) from gpus where family = ?", ["H100"]).rows()[0][0] > 0
    with pytest.raises(duckdb.Error):
        data.sql("create table mine (x int)")


def test_advice_ranks_read_only_and_matches_advise(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, recorded: tuple[Path, Path]
) -> None:
    config, original = recorded
    db = tmp_path / "copy.duckdb"
    shutil.copy(original, db)
    data = pa.open(config=config, db=db)
    ranked = data.advice(rank=True, top=3)
    assert {r["workload"] for r in ranked.records()} == {"chat-8b", "lora-8b"}
    assert max(r["rank"] for r in ranked.records()) == 3
    assert "flag_reason" in ranked.columns
    assert len(data.advice()) == 0  # ranking stored nothing
    with pytest.raises(pa.PriceDataError, match="no stored advice for workload 'chat-8b'"):
        data.advice("chat-8b")

    code, out, err = cli(
        capsys, "--config", str(config), "--db", str(db), "advise", "--top", "3", "-f", "json"
    )
    assert code == 0, err
    keys = ("workload", "rank", "provider", "region", "instance_type", "pricing")
    expected = [tuple(r[k] for k in keys) for r in json.loads(out)]
    stored = data.advice(top=3).records()
    assert [tuple(r[k] for k in keys) for r in stored] == expected
    assert [tuple(r[k] for k in keys) for r in ranked.records()] == expected
    one = data.advice("lora-8b", top=2).records()
    assert [(r["workload"], r["rank"]) for r in one] == [("lora-8b", 1), ("lora-8b", 2)]


def test_advice_refuses_unknown_workloads_as_advise_does(
    capsys: pytest.CaptureFixture[str], recorded: tuple[Path, Path]
) -> None:
    config, db = recorded
    code, _, err = cli(
        capsys, "--config", str(config), "--db", str(db), "advise", "--workload", "x"
    )
    with pytest.raises(pa.PriceDataError) as raised:
        pa.open(config=config, db=db).advice("x", rank=True)
    assert (code, err.strip()) == (2, f"error: {raised.value}")
    with pytest.raises(pa.PriceDataError, match="no workloads configured"):
        pa.open(db=db).advice(rank=True)


def test_estimate_is_estimate_s_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--gpu", "H100", "--gpus", "2", "--model", "llama-3.1-70b", "--precision", "fp8"]
    code, out, err = cli(capsys, "estimate", *args, "-f", "json")
    assert code == 0, err
    expected = json.loads(out)
    del expected["likely"]  # the CLI's wording of the ranges
    got = pa.PriceData.estimate(
        _no_data(), gpu="H100", gpus=2, model="llama-3.1-70b", precision="fp8"
    )
    assert _plain([got]) == [expected]


def test_estimate_says_what_would_fit_and_takes_architecture_numbers() -> None:
    data = _no_data()
    small = data.estimate("L4", model="llama-3.1-70b")
    assert not small["fits"]
    assert small["would_fit"]
    numbers = data.estimate("H100-SXM-80GB", params_b=7, task="serve")
    assert numbers["params_b"] == 7


@pytest.mark.parametrize(
    ("args", "kwargs", "field"),
    [
        (["--precision", "fp3"], {"precision": "fp3"}, "precision"),
        (["--task", "dance"], {"task": "dance"}, "task"),
        (["--engine", "warp"], {"engine": "warp"}, "engine"),
        (["--layers", "-3"], {"layers": -3}, "layers"),
    ],
)
def test_bad_workload_fields_get_the_cli_s_message(
    capsys: pytest.CaptureFixture[str], args: list[str], kwargs: dict[str, Any], field: str
) -> None:
    code, _, err = cli(capsys, "estimate", "--gpu", "H100", "--model", "llama-3.1-8b", *args)
    assert code == 2
    fields = {"model": "llama-3.1-8b", **kwargs}
    with pytest.raises(pa.PriceDataError) as raised:
        _no_data().estimate("H100", **fields)
    field_name, message = str(raised.value).split(": ", 1)
    assert field_name == field
    assert message in " ".join(err.split())


def test_estimate_refuses_unknown_gpus_and_keys() -> None:
    with pytest.raises(pa.PriceDataError, match="unknown GPU 'ZZ9000'"):
        _no_data().estimate("ZZ9000", model="llama-3.1-8b")
    with pytest.raises(pa.PriceDataError, match=r"^colour: unknown key$"):
        _no_data().estimate("H100", model="llama-3.1-8b", colour="red")
    with pytest.raises(pa.PriceDataError, match="gpus 0 is not in the range"):
        _no_data().estimate("H100", gpus=0, model="llama-3.1-8b")


CONVERSIONS = [("df", "pandas"), ("pl", "polars"), ("arrow", "pyarrow")]


def _no_data() -> pa.PriceData:
    """estimate reads no database: a PriceData on one that does not exist."""
    return pa.open(db=Path("never-created.duckdb"))


def test_results_keep_duckdb_types(recorded: tuple[Path, Path]) -> None:
    got = pa.open(db=recorded[1]).history(limit=3)
    assert got.types[got.columns.index("valid_from")].startswith("TIMESTAMP")
    assert all(hasattr(r["valid_from"], "isoformat") for r in got.records())
    assert repr(got).startswith("<Result 3 rows: provider, region")


@pytest.mark.parametrize(("method", "package"), CONVERSIONS)
def test_a_missing_library_is_named(
    monkeypatch: pytest.MonkeyPatch, recorded: tuple[Path, Path], method: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # as if not installed
    got = pa.open(db=recorded[1]).offers(limit=2)
    with pytest.raises(pa.MissingLibraryError) as raised:
        getattr(got, method)()
    assert str(raised.value) == (
        f"Result.{method}() needs {package}, which is not installed: pip install {package}"
    )


@pytest.mark.parametrize(("method", "package"), CONVERSIONS)
def test_conversions_when_the_library_is_installed(
    recorded: tuple[Path, Path], method: str, package: str
) -> None:
    pytest.importorskip(package)
    got = pa.open(db=recorded[1]).offers(gpu="H100")
    try:
        frame = getattr(got, method)()
    except pa.MissingLibraryError as exc:  # e.g. polars without pyarrow: named, not a crash
        assert "pip install" in str(exc)
        return
    if method == "arrow":
        assert (frame.num_rows, frame.column_names) == (len(got), got.columns)
        assert str(frame.schema.field("price_gpu_hour_usd").type) == "double"
    else:
        assert (frame.shape[0], list(frame.columns)) == (len(got), got.columns)
    assert len(got) > 10


def test_offers_as_of_are_what_prices_as_of_lists(
    capsys: pytest.CaptureFixture[str], recorded: tuple[Path, Path]
) -> None:
    _, db = recorded
    data = pa.open(db=db)
    [(fetched,)] = data.sql("select max(valid_from) from price_history").rows()
    after = (fetched + dt.timedelta(seconds=1)).isoformat()
    expected = _json(capsys, db, "prices", "--gpu", "H100", "--as-of", after)
    assert expected
    assert _plain(data.offers(gpu="H100", as_of=after).records()) == expected
    assert data.offers(gpu="H100", as_of=fetched + dt.timedelta(seconds=1)).rows() == (
        data.offers(gpu="H100", as_of=after).rows()
    )
    before = "2001-01-01T00:00"
    assert _json(capsys, db, "prices", "--as-of", before) == []
    assert len(data.offers(as_of=before)) == 0
    with pytest.raises(pa.PriceDataError, match="as_of takes an ISO 8601 time"):
        data.offers(as_of="last tuesday")
    with data.session(), pytest.raises(pa.PriceDataError, match="outside session"):
        data.offers(as_of=after)
