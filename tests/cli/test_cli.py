from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import duckdb
import pytest

from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.manifest import manifest
from tests.conftest import cli, cli_process, query

EU_MEMBERS = {
    "AT",
    "BE",
    "BG",
    "HR",
    "CY",
    "CZ",
    "DK",
    "EE",
    "FI",
    "FR",
    "DE",
    "GR",
    "HU",
    "IE",
    "IT",
    "LV",
    "LT",
    "LU",
    "MT",
    "NL",
    "PL",
    "PT",
    "RO",
    "SK",
    "SI",
    "ES",
    "SE",
}


@pytest.fixture
def fetched(capsys: pytest.CaptureFixture[str], db_path: Path) -> Path:
    code, out, _ = cli(capsys, "--db", str(db_path), "fetch", "--offline")
    assert code == 0 and "azure" in out
    return db_path


def test_fetch_offline_summary_as_json(capsys: pytest.CaptureFixture[str], db_path: Path) -> None:
    code, out, _ = cli(capsys, "--db", str(db_path), "fetch", "--offline", "--format", "json")
    assert code == 0
    summaries = {s["provider"]: s for s in json.loads(out)}
    # every provider but those disabled until a response is recorded (cloudrift, quantacloud)
    assert set(summaries) == {p for p in REGISTRY if manifest(p).enabled_by_default}
    assert all(s["status"] == "ok" for s in summaries.values())
    azure = summaries["azure"]
    # rejected: one zero price and the two Spot meters equal to pay-as-you-go; 57 offers:
    # 56 hourly prices and one 1-year reservation (pricing = reserved)
    assert azure["offers"] == 57 and azure["requests"] == 3 and azure["rejected"] == 3
    assert all(s["duplicates"] == 0 for s in summaries.values())


def test_derived_prices_only_when_asked_for(
    capsys: pytest.CaptureFixture[str], fetched: Path
) -> None:
    base = ["--db", str(fetched), "prices", "--provider", "oracle", "--format", "json"]
    code, out, _ = cli(capsys, *base, "--pricing", "spot")
    assert code == 0 and json.loads(out) == []
    code, out, _ = cli(capsys, *base, "--pricing", "spot", "--include-derived")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 16
    assert {r["price_origin"] for r in rows} == {"derived"}
    code, out, _ = cli(capsys, *base)
    assert {r["price_origin"] for r in json.loads(out)} == {"published"}


def test_sql_json_through_env_db(
    capsys: pytest.CaptureFixture[str], fetched: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRICEADVISOR_DB", str(fetched))
    code, out, _ = cli(
        capsys,
        "sql",
        "--format",
        "json",
        "select count(*) as n from offers where provider = 'azure'",
    )
    assert code == 0 and json.loads(out) == [{"n": 57}]


def test_sql_csv(capsys: pytest.CaptureFixture[str], fetched: Path) -> None:
    code, out, _ = cli(
        capsys,
        "--db",
        str(fetched),
        "sql",
        "-f",
        "csv",
        "select gpu_model, count(*) n from offers where gpu_model like 'H100%' "
        "and provider = 'azure' group by 1 order by 1",
    )
    assert code == 0
    assert out.splitlines() == ["gpu_model,n", "H100-NVL-94GB,4", "H100-SXM-80GB,8"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["sql", "delete from offers"], 1, "refused: only read queries are allowed here"),
        (["sql", "copy offers to '/tmp/x.csv'"], 1, "not COPY"),
        (["sql", "attach '/tmp/other.duckdb'"], 1, "not ATTACH"),
        (["sql", "selec 1"], 1, "SQL error: Parser Error"),
        (["sql", "select nope from offers"], 1, "SQL error: Binder Error"),
        (["sql", "select 1; select 2"], 1, "exactly one SQL statement"),
        (["prices", "--provider", "nope"], 2, "unknown provider 'nope'"),
        (["fetch", "--provider", "nope", "--offline"], 2, "unknown provider 'nope'"),
        (["prices", "--pricing", "monthly"], 2, "unknown pricing"),
        (["prices", "--continent", "XX"], 2, "unknown continent"),
        (["prices", "--sort", "cheap"], 2, "unknown sort"),
        (["prices", "--limit", "x"], 2, "--limit"),
        (["prices", "--format", "xml"], 2, "--format"),
        (["nosuchcommand"], 2, "No such command"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(
    capsys: pytest.CaptureFixture[str], fetched: Path, args: list[str], code: int, message: str
) -> None:
    got, _, err = cli(capsys, "--db", str(fetched), *args)
    assert got == code
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert "Traceback" not in err


def test_sql_leaves_the_database_unchanged(
    capsys: pytest.CaptureFixture[str], fetched: Path
) -> None:
    cli(capsys, "--db", str(fetched), "sql", "delete from offers")
    _code, out, _ = cli(
        capsys,
        "--db",
        str(fetched),
        "sql",
        "-f",
        "json",
        "select count(*) n from offers where provider = 'azure'",
    )
    assert json.loads(out) == [{"n": 57}]


def test_reading_before_any_fetch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "--db", str(tmp_path / "none.duckdb"), "prices")
    assert code == 1 and "run `priceadvisor fetch`" in err


@pytest.mark.parametrize(
    ("toml", "command", "key"),
    [
        (
            '[providers.azure]\ninterval = "every now and then"\n',
            "prices",
            "providers.azure.interval",
        ),
        ('[providers.azure.endpoints]\nprise = "http://127.0.0.1:1"\n', "fetch", "'prise'"),
        ("[http]\nattempts = 'many'\n", "prices", "http.attempts"),
    ],
)
def test_bad_config_exits_2_naming_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, toml: str, command: str, key: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(toml)
    code, _, err = cli(capsys, "--config", str(config), "--db", str(tmp_path / "d"), command)
    assert code == 2 and key in err and len(err.strip().splitlines()) == 1


def test_bad_config_from_env_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRICEADVISOR_HTTP__ATTEMPTS", "many")
    code, _, err = cli(capsys, "prices")
    assert code == 2 and "http.attempts" in err


def test_prices_filters_sort_and_eu(capsys: pytest.CaptureFixture[str], fetched: Path) -> None:
    code, out, _ = cli(
        capsys,
        "--db",
        str(fetched),
        "prices",
        "--gpu",
        "h100",
        "--pricing",
        "spot",
        "-p",
        "azure",
        "-f",
        "json",
    )
    rows = json.loads(out)
    assert code == 0 and len(rows) == 6
    assert all(r["gpu_model"].startswith("H100") and r["pricing"] == "spot" for r in rows)
    per_gpu = [r["price_gpu_hour_usd"] for r in rows]
    assert per_gpu == sorted(per_gpu)
    _, out, _ = cli(capsys, "--db", str(fetched), "prices", "--eu", "-f", "json", "--limit", "500")
    eu = json.loads(out)
    assert eu and all(r["country"] in EU_MEMBERS for r in eu)
    assert "GB" not in {r["country"] for r in eu}  # uksouth is in Europe, not the EU
    _, out, _ = cli(
        capsys, "--db", str(fetched), "prices", "--continent", "eu", "-f", "json", "--limit", "500"
    )
    assert "GB" in {r["country"] for r in json.loads(out)}
    _, out, _ = cli(
        capsys, "--db", str(fetched), "prices", "--country", "Germany", "-p", "azure", "-f", "json"
    )
    assert {r["region"] for r in json.loads(out)} == {"germanywestcentral"}


def test_history_lists_intervals(capsys: pytest.CaptureFixture[str], fetched: Path) -> None:
    code, out, _ = cli(
        capsys, "--db", str(fetched), "history", "--gpu", "H200", "-p", "azure", "-f", "json"
    )
    rows = json.loads(out)
    # eastus2's H200 Spot meter equals pay-as-you-go: rejected, not history
    assert code == 0 and len(rows) == 3 and all(r["valid_to"] is None for r in rows)


def test_export_writes_day_partitioned_parquet(
    capsys: pytest.CaptureFixture[str], fetched: Path, tmp_path: Path
) -> None:
    target = tmp_path / "export"
    code, _, _ = cli(capsys, "--db", str(fetched), "export", "--out", str(target))
    assert code == 0
    assert list((target / "price_history").glob("day=*/*.parquet"))
    con = duckdb.connect()
    n = con.execute(
        f"SELECT count(*) FROM read_parquet('{target}/price_history/*/*.parquet', "
        "hive_partitioning = true)"
    ).fetchone()
    expected = (
        duckdb.connect(str(fetched), read_only=True)
        .execute("SELECT count(*) FROM price_history")
        .fetchone()
    )
    assert n == expected and n is not None and n[0] > 0
    cli(capsys, "--db", str(fetched), "export", "--out", str(target))  # re-export replaces
    assert len(list((target / "price_history").glob("day=*/*.parquet"))) == 1


def test_doctor_on_the_offline_demo_has_no_unmapped_names_and_is_healthy(
    capsys: pytest.CaptureFixture[str], fetched: Path
) -> None:
    code, out, _ = cli(capsys, "--db", str(fetched), "doctor", "-f", "json")
    report = json.loads(out)
    assert code == 0 and report["healthy"] is True
    assert report["unmapped"] == []  # every GPU of every recording is in the catalog
    assert {p["provider"]: p["state"] for p in report["providers"]}["azure"] == "recorded"
    not_rentable = {p["provider"]: p["not_rentable"] for p in report["providers"]}
    # the recordings: Verda's availability call lists 11 of 42 offers, Azure says nothing
    assert (not_rentable["verda"], not_rentable["azure"]) == ("31/42 (74%)", "unknown")
    rejections = report["rejections"]
    assert {"provider": "azure", "reason": "price not positive", "quotes": 1} in rejections
    spot = "spot price not below the on-demand price of the same offer"
    assert {"provider": "azure", "reason": spot, "quotes": 2} in rejections


def test_doctor_is_unhealthy_without_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(capsys, "--db", str(tmp_path / "none.duckdb"), "doctor")
    assert code == 1 and "UNHEALTHY" in out


def test_doctor_is_unhealthy_when_a_provider_keeps_failing(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[providers.azure]\ndeadline = "5s"\n'
        '[providers.azure.endpoints]\nprices = "http://127.0.0.1:9"\n'
        '[http]\nattempts = 1\ntimeout = "2s"\n'
    )
    code, out, _ = cli(capsys, "--config", str(config), "--db", str(db_path), "fetch")
    assert code == 1 and "failed" in out
    code, out, _ = cli(capsys, "--config", str(config), "--db", str(db_path), "doctor")
    assert code == 1 and "azure: failing" in out


def test_providers_json(capsys: pytest.CaptureFixture[str], fetched: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[providers.azure.endpoints]\nprices = "http://127.0.0.1:8080"\n')
    code, out, _ = cli(
        capsys, "--config", str(config), "--db", str(fetched), "providers", "-f", "json"
    )
    azure = next(p for p in json.loads(out) if p["id"] == "azure")
    assert code == 0 and azure["id"] == "azure" and azure["configured"] == "yes"
    assert azure["endpoints"] == {"prices": "http://127.0.0.1:8080/api/retail/prices"}
    assert azure["interval"] == "6h" and azure["last_status"] == "ok"


def test_providers_show_their_billing_terms(
    capsys: pytest.CaptureFixture[str], fetched: Path
) -> None:
    code, out, _ = cli(capsys, "--db", str(fetched), "providers", "-f", "json")
    rows = {p["id"]: p for p in json.loads(out)}
    aws = rows["aws"]["billing"]
    assert code == 0 and rows["aws"]["billing_known"] == "5/9"
    assert aws["granularity"]["value"] == "second" and aws["minimum_minutes"]["value"] == 1
    assert aws["granularity"]["source"].startswith("https://")
    assert aws["egress_usd_per_gb"] == {
        "value": "unknown",
        "source": None,
        "note": aws["egress_usd_per_gb"]["note"],
    }
    assert rows["ecb"]["billing"] is None  # FX rates bill nothing
    code, out, _ = cli(capsys, "--db", str(fetched), "providers")
    assert code == 0 and "billing_known" in out and "one-minute minimum" not in out
    code, out, _ = cli(capsys, "--db", str(fetched), "providers", "--billing", "-f", "json")
    terms = [t for t in json.loads(out) if t["provider"] == "runpod"]
    egress = next(t for t in terms if t["term"] == "egress_usd_per_gb")
    assert code == 0 and len(terms) == 9
    assert egress["value"] == 0 and "no fees for data transfer" in egress["note"]


def test_demo_builds_a_fresh_database(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "demo.duckdb"
    code, out, _ = cli(capsys, "--db", str(target), "demo")
    assert code == 0 and "Cheapest current GPU offers" in out and "T4-16GB" in out
    code, _, err = cli(capsys, "--db", str(target), "demo")
    assert code == 1 and "--replace" in err
    code, _, _ = cli(capsys, "--db", str(target), "demo", "--replace")
    assert code == 0


def test_two_demos_keep_their_own_databases(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --db each demo gets a database of its own: a second demo (at the same time, on
    the same machine) never deletes the first one's."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = []
    for _ in range(2):
        code, out, _ = cli(capsys, "demo")
        assert code == 0
        made.append(Path(re.search(r"The demo database is (\S+),", out)[1]))  # type: ignore[index]
    assert made[0] != made[1]
    for path in made:
        assert path.is_relative_to(tmp_path)
        assert query(path, "SELECT count(*) FROM offers")[0][0] > 0


@pytest.mark.slow
def test_console_script_runs_as_a_process(tmp_path: Path) -> None:
    db = tmp_path / "p.duckdb"
    done = cli_process("--db", str(db), "fetch", "--offline", "-p", "azure")
    assert done.returncode == 0, done.stderr
    bad = cli_process("--db", str(db), "sql", "insert into offers values (1)")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("error: ")


def test_doctor_does_not_count_unconfigured_providers_as_unhealthy(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    others = [p for p in REGISTRY if p not in ("azure", "gcp")]
    config.write_text("".join(f"[providers.{p}]\nenabled = false\n" for p in others))
    cli(capsys, "--config", str(config), "--db", str(db_path), "fetch", "--offline", "-p", "azure")
    code, out, _ = cli(
        capsys, "--config", str(config), "--db", str(db_path), "doctor", "-f", "json"
    )
    states = {p["provider"]: p["state"] for p in json.loads(out)["providers"]}
    assert states["gcp"] == "not configured: set GCP_API_KEY" and states["azure"] == "recorded"
    assert code == 0


def test_provider_failing_after_n_consecutive_failures(
    capsys: pytest.CaptureFixture[str], db_path: Path, tmp_path: Path
) -> None:
    good = tmp_path / "good.toml"
    others = [p for p in REGISTRY if p not in ("azure", "gcp")]
    disabled = "".join(f"[providers.{p}]\nenabled = false\n" for p in others)
    good.write_text(disabled + "[daemon]\nfailing_after = 2\n")
    bad = tmp_path / "bad.toml"
    bad.write_text(
        disabled + "[daemon]\nfailing_after = 2\n[http]\nattempts = 1\n"
        '[providers.azure.endpoints]\nprices = "http://127.0.0.1:9"\n'
    )
    cli(capsys, "--config", str(good), "--db", str(db_path), "fetch", "--offline", "-p", "azure")
    states = []
    for _ in range(2):
        cli(capsys, "--config", str(bad), "--db", str(db_path), "fetch", "-p", "azure")
        code, out, _ = cli(
            capsys, "--config", str(bad), "--db", str(db_path), "doctor", "-f", "json"
        )
        report = json.loads(out)
        states.append(({p["provider"]: p["state"] for p in report["providers"]}["azure"], code))
    # the good run replayed recordings: never called "fresh", which means live
    assert states == [("recorded, last run failed", 0), ("failing", 1)]


def _readme_setup_launcher() -> str:
    """The README's first command (ci:setup) up to the program's name."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = readme.split("<!-- ci:setup -->", 1)[1].split("```")[1]
    [command] = [line for line in block.splitlines()[1:] if line.strip()]
    return command[: command.index("priceadvisor ") + len("priceadvisor")]


def test_demo_next_steps_run_as_shown_after_the_readmes_first_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "uvw").write_text("#!/bin/sh\n")
    (checkout / "pyproject.toml").write_text("")
    monkeypatch.chdir(checkout)
    target = tmp_path / "demo.duckdb"
    code, out, _ = cli(capsys, "--db", str(target), "demo")
    launcher = _readme_setup_launcher()
    steps = [line.strip() for line in out.splitlines() if line.startswith("  ./")]
    assert code == 0 and len(steps) == 4  # prices, sql, doctor, advise (the demo's workloads)
    for step in steps:  # the README's launcher, then arguments that work
        assert step.startswith(f"{launcher} --db {target} ")
        args = shlex.split(step.removeprefix(launcher))
        code, _, err = cli(capsys, *args)
        assert code == 0, (step, err)
    monkeypatch.chdir(tmp_path)  # not a checkout: the installed command by its name
    code, out, _ = cli(capsys, "--db", str(target), "demo", "--replace")
    assert code == 0 and f"  priceadvisor --db {target} doctor" in out
