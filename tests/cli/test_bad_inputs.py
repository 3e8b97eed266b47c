"""Bad input of every kind — CLI arguments of every command, config files, environment, database
paths — ends with one line on stderr, never a traceback, and the documented exit code: 2 for
usage and configuration errors, 1 for the rest. Unknown PRICEADVISOR_* variables warn."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from priceadvisor.cli.app import main
from priceadvisor.store import schema
from tests.conftest import cli_process

# (arguments after `--db {db}`, exit code, a fragment of the error line). Placeholders: {db} the
# database, {tmp} this test's folder, {file} a regular file, {full} a folder holding a file.
ARGS: list[tuple[list[str], int, str]] = [
    # prices
    (["prices", "--limit", "0"], 2, "--limit"),
    (["prices", "--limit", "-1"], 2, "--limit"),
    (["prices", "--limit", "x"], 2, "--limit"),
    (["prices", "--limit", "1e23"], 2, "--limit"),
    (["prices", "--limit", "100000000000000000000000"], 2, "--limit"),
    (["prices", "--limit", ""], 2, "--limit"),
    (["prices", "--sort", "cheap"], 2, "unknown sort"),
    (["prices", "--pricing", "monthly"], 2, "unknown pricing"),
    (["prices", "--continent", "XX"], 2, "unknown continent"),
    (["prices", "--provider", "nope"], 2, "unknown provider 'nope'"),
    (["prices", "--provider", "azure", "--provider", "../etc"], 2, "unknown provider"),
    (["prices", "--format", "xml"], 2, "--format"),
    (["prices", "--bogus"], 2, "No such option"),
    (["prices", "extra"], 2, "unexpected extra argument"),
    (["prices", "--limit"], 2, "requires an argument"),
    # history
    (["history", "--limit", "0"], 2, "--limit"),
    (["history", "--limit", "99999999999999999999"], 2, "--limit"),
    (["history", "--provider", "nope"], 2, "unknown provider"),
    (["history", "--pricing", "x"], 2, "unknown pricing"),
    (["history", "--format", "yaml"], 2, "--format"),
    (["history", "x"], 2, "unexpected extra argument"),
    # sql
    (["sql"], 2, "Missing argument"),
    (["sql", ""], 1, "exactly one SQL statement (got 0)"),
    (["sql", "   ;  "], 1, "exactly one SQL statement"),
    (["sql", "/* only a comment */"], 1, "exactly one SQL statement"),
    (["sql", "selec 1"], 1, "SQL error: Parser Error"),
    (["sql", "select nope from offers"], 1, "SQL error: Binder Error"),
    (["sql", "select 1/0::int"], 0, ""),
    (["sql", "select 'a'::int"], 1, "SQL error: Conversion Error"),
    (["sql", "select * from nosuchview"], 1, "SQL error: Catalog Error"),
    (["sql", "select 1; select 2"], 1, "exactly one SQL statement (got 2)"),
    (["sql", "delete from offers"], 1, "not DELETE"),
    (["sql", "drop view offers"], 1, "not DROP"),
    (["sql", "explain analyze delete from offers"], 1, "EXPLAIN is allowed of a query only"),
    (["sql", "select * from read_csv('{file}')"], 1, "refused: Permission Error"),
    (["sql", "select 1", "--format", "xml"], 2, "--format"),
    (["sql", "select 1", "select 2"], 2, "unexpected extra argument"),
    (["sql", "select repeat('x', 10) || chr(0)"], 0, ""),
    # export
    (["export", "--out", "/proc/x"], 1, "cannot export to /proc/x"),
    (["export", "--out", "{file}"], 1, "is not a directory"),
    (["export", "--out", "{full}"], 1, "not an earlier priceadvisor export"),
    (["export", "--out", "/proc/self"], 1, "export target /proc/self"),
    (["export", "--out"], 2, "requires an argument"),
    # doctor, providers, fetch, run, demo
    (["doctor", "--format", "xml"], 2, "--format"),
    (["doctor", "x"], 2, "unexpected extra argument"),
    (["providers", "--format", "x"], 2, "--format"),
    (["fetch", "--provider", "nope", "--offline"], 2, "unknown provider 'nope'"),
    (["fetch", "--format", "x"], 2, "--format"),
    (["run", "--bogus"], 2, "No such option"),
    (["demo"], 1, "exists; the demo needs a fresh database"),
    (["nosuchcommand"], 2, "No such command"),
    (["--bogus"], 2, "No such option"),
    # estimate
    (["estimate"], 2, "Missing option '--gpu'"),
    (["estimate", "--gpu", "nope", "--model", "llama-3.1-8b"], 2, "unknown GPU"),
    (["estimate", "--gpu", "H100", "--model", "no-such-model"], 2, "no-such-model"),
    (["estimate", "--gpu", "H100"], 2, "give exactly one of model"),
    (["estimate", "--gpu", "H100", "--config-json", "/nonexistent.json"], 2, "nonexistent"),
    (["estimate", "--gpu", "H100", "--config-json", "{file}"], 2, "cannot read"),
    (["estimate", "--gpu", "H100", "--model", "llama-3.1-8b", "--params-b", "8"], 2, "exactly one"),
    (["estimate", "--gpu", "H100", "--model", "llama-3.1-8b", "--task", "dance"], 2, "task"),
    (["estimate", "--gpu", "H100", "--model", "llama-3.1-8b", "--gpus", "0"], 2, "--gpus"),
    (["estimate", "--gpu", "H100", "--model", "llama-3.1-8b", "--gpus", "x"], 2, "--gpus"),
    (["estimate", "--gpu", "H100", "--model", "llama-3.1-8b", "--format", "x"], 2, "--format"),
    # advise
    (["advise"], 2, "no workload"),
    (["advise", "--workload", "nope"], 2, "no workloads configured"),
    (["advise", "--format", "x"], 2, "--format"),
    # tco
    (["tco"], 2, "give --gpu or --workload"),
    (["tco", "--gpu", "H100", "--workload", "w"], 2, "give --gpu or --workload"),
    (["tco", "--gpu", "nope"], 2, "unknown GPU"),
    (["tco", "--workload", "nope"], 2, "unknown workload"),
    (["tco", "--gpu", "H100", "--purchase-price", "-5"], 2, "--purchase-price"),
    (["tco", "--gpu", "H100", "--purchase-price", "0"], 2, "--purchase-price"),
    (["tco", "--gpu", "H100", "--purchase-price", "nan"], 2, "not a finite number"),
    (["tco", "--gpu", "H100", "--purchase-price", "inf"], 2, "not a finite number"),
    (["tco", "--gpu", "H100", "--purchase-price", "-inf"], 2, "not a finite number"),
    (["tco", "--gpu", "H100", "--purchase-price", "1e400"], 2, "not a finite number"),
    (["tco", "--gpu", "H100", "--power-w", "-5"], 2, "--power-w"),
    (["tco", "--gpu", "H100", "--power-w", "nan"], 2, "--power-w"),
    (["tco", "--gpu", "H100", "--pue", "0.5"], 2, "--pue"),
    (["tco", "--gpu", "H100", "--pue", "nan"], 2, "--pue"),
    (["tco", "--gpu", "H100", "--pue", "inf"], 2, "--pue"),
    (["tco", "--gpu", "H100", "--electricity", "-1"], 2, "--electricity"),
    (["tco", "--gpu", "H100", "--electricity", "nan"], 2, "--electricity"),
    (["tco", "--gpu", "H100", "--utilisation", "0"], 2, "--utilisation"),
    (["tco", "--gpu", "H100", "--utilisation", "2"], 2, "--utilisation"),
    (["tco", "--gpu", "H100", "--server-share", "-0.1"], 2, "--server-share"),
    (["tco", "--gpu", "H100", "--colocation", "-1"], 2, "--colocation"),
    (["tco", "--gpu", "H100", "--colocation", "nan"], 2, "--colocation"),
    (["tco", "--gpu", "H100", "--utilisation", "nan"], 2, "--utilisation"),
    (["tco", "--gpu", "H100", "--years", "0"], 2, "--years"),
    (["tco", "--gpu", "H100", "--years", "inf"], 2, "--years"),
    (["tco", "--gpu", "H100", "--years", "nan"], 2, "--years"),
    (["tco", "--gpu", "H100", "--years", "x"], 2, "--years"),
    # calibrate
    (["calibrate", "--format", "x"], 2, "--format"),
    # digest
    (["digest"], 2, "give --preview DIR and/or --send"),
    (["digest", "--preview", "{file}"], 1, "is a file"),
    (["digest", "--preview", "/proc/x"], 1, "cannot write the preview into /proc/x"),
    (["digest", "--preview", "/proc"], 1, "cannot write the preview into /proc"),
    (["digest", "--preview", "/dev/null"], 1, "is a file"),
    (["digest", "--send"], 1, "no notification channel configured"),
    # notifications, alerts
    (["notifications", "--format", "x"], 2, "--format"),
    (["alerts", "test"], 1, "no notification channel configured"),
    (["alerts", "list", "--format", "x"], 2, "--format"),
    (["alerts", "nosuch"], 2, "No such command"),
    (["alerts", "silence", "add"], 2, "Missing option '--match'"),
    (["alerts", "silence", "add", "--match", "foo"], 2, "--match takes label=value"),
    (["alerts", "silence", "add", "--match", "=b"], 2, "--match takes label=value"),
    (["alerts", "silence", "add", "--match", "a="], 2, "--match takes label=value"),
    (["alerts", "silence", "add", "--match", "a=b", "--duration", "999999999d"], 2, "100 years"),
    (["alerts", "silence", "add", "--match", "a=b", "--duration", "0"], 2, "positive"),
    (["alerts", "silence", "add", "--match", "a=b", "--duration", "-5"], 2, "--duration"),
    (["alerts", "silence", "add", "--match", "a=b", "--duration", "nan"], 2, "--duration"),
    (["alerts", "silence", "add", "--match", "a=b", "--duration", "inf"], 2, "--duration"),
    (["alerts", "silence", "add", "--match", "a=b", "--duration", "often"], 2, "invalid duration"),
    (["alerts", "silence", "rm", "x"], 2, "silence_id"),
    (["alerts", "silence", "rm", "999"], 1, "no silence 999"),
    (["alerts", "silence", "rm", "99999999999999999999999"], 1, "no silence"),
]

# A config file (TOML text) that must be refused with exit 2, and a fragment of the message.
CONFIGS: list[tuple[str, str]] = [
    ("this is not toml", "invalid config"),
    ("[providers.azure\nenabled = true", "invalid config"),
    ("bogus = 1", "bogus: unknown key"),
    ("[providers.azrue]\nenabled = false", "unknown provider 'azrue'"),
    ("[providers.AZURE]\nenabled = false", "unknown provider 'AZURE'"),
    ('[providers.azure]\ninterval = "often"', "invalid duration 'often'"),
    ("[providers.azure]\ninterval = -5", "providers.azure.interval"),
    ("[providers.azure]\ninterval = inf", "finite"),
    ("[providers.azure]\ninterval = nan", "finite"),
    ('[providers.azure]\ninterval = "999999999d"', "100 years"),
    ("[providers.azure]\ninterval = true", "boolean"),
    ('[providers.azure]\nenabled = "maybe"', "providers.azure.enabled"),
    ("[providers.azure]\nbogus = 1", "providers.azure.bogus: unknown key"),
    ("[providers.azure]\nrequest_spacing = -1", "request_spacing"),
    ("[providers.azure]\ndeadline = 0", "deadline"),
    ("[providers.azure.endpoints]\nprices = 5", "endpoints"),
    ("providers = 5", "providers"),
    ("[http]\nattempts = 0", "http.attempts"),
    ("[http]\nattempts = 100", "http.attempts"),
    ('[http]\ntimeout = "x"', "http.timeout"),
    ("[http]\nmax_retry_after = -1", "http.max_retry_after"),
    ("[daemon]\nhealth_port = 70000", "daemon.health_port"),
    ("[daemon]\nhealth_port = -1", "daemon.health_port"),
    ("[daemon]\njitter = 0.9", "daemon.jitter"),
    ("[daemon]\nfailing_after = 0", "daemon.failing_after"),
    ('[daemon]\nshutdown_grace = "forever"', "daemon.shutdown_grace"),
    ('log_level = "LOUD"', "log_level"),
    ("lock_timeout = 0", "lock_timeout"),
    ('lock_timeout = "1000000000d"', "100 years"),
    ('[[workloads]]\nname = "w"\ntask = "serve"', "exactly one of model"),
    ('[[workloads]]\nname = "w"\ntask = "serve"\nmodel = "no-such-model"', "no-such-model"),
    ('[[workloads]]\nname = "w"\ntask = "dance"\nmodel = "llama-3.1-8b"', "workloads.0.task"),
    ('[[workloads]]\nname = "w"\ntask = "pretrain"\nmodel = "llama-3.1-8b"', "train_tokens"),
    ('[[workloads]]\nname = ""\ntask = "serve"\nmodel = "llama-3.1-8b"', "workloads.0.name"),
    (
        '[[workloads]]\nname = "w"\ntask = "serve"\nmodel = "llama-3.1-8b"\n'
        '[[workloads]]\nname = "w"\ntask = "serve"\nmodel = "llama-3.1-8b"',
        "repeated: w",
    ),
    (
        '[[workloads]]\nname = "w"\ntask = "serve"\nmodel = "llama-3.1-8b"\ncontinents = ["XX"]',
        "continents",
    ),
    (
        '[[workloads]]\nname = "w"\ntask = "serve"\nmodel = "llama-3.1-8b"\nconcurrency = 0',
        "concurrency",
    ),
    (
        '[[workloads]]\nname = "w"\ntask = "serve"\nmodel_config_json = "/nonexistent.json"',
        "nonexistent",
    ),
    ('[notify.email]\nsender = "a@b.c"\nrecipients = ["x@y.z"]', "notify.email.host"),
    ('[notify.email]\nhost = "h"\nport = 0\nsender = "a@b.c"\nrecipients = ["x"]', "port"),
    ('[notify.email]\nhost = "h"\nsender = "a@b.c"\nrecipients = []', "recipients"),
    (
        '[notify.email]\nhost = "h"\nsecurity = "ssl"\nsender = "a@b.c"\nrecipients = ["x"]',
        "security",
    ),
    ("[notify]\nmax_attempts = 0", "notify.max_attempts"),
    ('[notify]\ndeliver_every = "never"', "notify.deliver_every"),
    ("[notify.slack]\nbogus = 1", "notify.slack.bogus: unknown key"),
    ('[[alerts.rules]]\nkind = "bogus"', "alerts.rules.0.kind"),
    ('[[alerts.rules]]\nkind = "cheaper"', "needs workload"),
    ('[[alerts.rules]]\nkind = "price_drop"', "needs gpu_model"),
    ('[[alerts.rules]]\nkind = "price_drop"\ngpu_model = "H999"', "unknown gpu_model 'H999'"),
    ('[[alerts.rules]]\nkind = "new_offer"\ngpu_model = "h100"', "unknown gpu_model 'h100'"),
    ('[[alerts.rules]]\nkind = "cheaper"\nworkload = "nope"', "unknown workload 'nope'"),
    ('[[alerts.rules]]\nkind = "new_offer"\nproviders = ["azrue"]', "unknown provider 'azrue'"),
    (
        '[[alerts.rules]]\nkind = "price_drop"\ngpu_model = "H100-SXM-80GB"\nthreshold_pct = 150',
        "threshold_pct",
    ),
    ("[alerts]\nfor_fetches = 0", "alerts.for_fetches"),
    ('[alerts]\nrepeat_interval = "0s"', "alerts.repeat_interval"),
    ('[digest]\ncron = "every monday"', "invalid cron"),
    ('[digest]\ncron = "99 8 * * mon"', "invalid cron"),
    ('[digest]\ntimezone = "Mars/Base"', "unknown time zone"),
    ("[digest]\ntop = 0", "digest.top"),
]

# Environment variables that must be refused with exit 2.
ENVS: list[tuple[dict[str, str], str]] = [
    ({"PRICEADVISOR_HTTP__ATTEMPTS": "x"}, "http.attempts"),
    ({"PRICEADVISOR_LOG_LEVEL": "LOUD"}, "log_level"),
    ({"PRICEADVISOR_LOCK_TIMEOUT": "-1"}, "lock_timeout"),
    ({"PRICEADVISOR_LOCK_TIMEOUT": "nan"}, "lock_timeout"),
    ({"PRICEADVISOR_PROVIDERS__AZRUE__ENABLED": "false"}, "unknown provider 'azrue'"),
    ({"PRICEADVISOR_PROVIDERS__AZURE__INTERVAL": "never"}, "invalid duration"),
    ({"PRICEADVISOR_PROVIDERS__AZURE__BOGUS": "1"}, "unknown key"),
    ({"PRICEADVISOR_DAEMON__HEALTH_PORT": "-1"}, "daemon.health_port"),
    ({"PRICEADVISOR_PROVIDERS": "{"}, "providers"),
    ({"PRICEADVISOR_HTTP": "[1]"}, "http"),
    ({"PRICEADVISOR_CONFIG": "/nonexistent.toml"}, "config file not found"),
    ({"PRICEADVISOR_DIGEST__TIMEZONE": "Nowhere"}, "unknown time zone"),
]

# Database paths (given as --db) that must be refused with exit 1 by a reading command.
DATABASES: list[tuple[str, str]] = [
    ("{tmp}/missing.duckdb", "no database at"),
    ("/nonexistent/dir/x.duckdb", "no database at"),
    ("{tmp}", "no database at"),
    ("{sqlite}", "is a SQLite file, not a priceadvisor DuckDB database"),
    ("{garbage}", "cannot open database"),
    ("{foreign}", "is not a priceadvisor database"),
    ("{old}", "run `priceadvisor fetch` once to upgrade it"),
    ("{newer}", "written by a newer priceadvisor"),
]
# And with a writing command.
WRITE_DATABASES: list[tuple[str, str]] = [
    ("{sqlite}", "is a SQLite file"),
    ("{garbage}", "cannot open database"),
    ("{tmp}", "cannot open database"),
    ("/proc/priceadvisor/x.duckdb", "cannot create a database at"),
    ("{newer}", "written by a newer priceadvisor"),
]


@pytest.fixture(scope="module")
def data_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "prices.duckdb"
    with pytest.raises(SystemExit) as done:
        main(["--db", str(path), "fetch", "--offline", "-p", "azure", "-f", "json"])
    assert done.value.code in (0, None)
    return path


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory, data_db: Path) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad")
    files = {"sqlite": folder / "sqlite.db", "garbage": folder / "garbage.duckdb"}
    with sqlite3.connect(files["sqlite"]) as con:
        con.execute("CREATE TABLE t (a)")
    con.close()
    files["garbage"].write_bytes(b"\x00\x01garbage" * 1000)
    files["foreign"] = folder / "foreign.duckdb"
    foreign = duckdb.connect(str(files["foreign"]))
    foreign.execute("CREATE TABLE t AS SELECT 1 AS a")
    foreign.close()
    files["old"] = _with_version(data_db, folder / "old.duckdb", schema.latest_version() - 1)
    files["newer"] = _with_version(data_db, folder / "newer.duckdb", schema.latest_version() + 1)
    return files


def _with_version(source: Path, target: Path, version: int) -> Path:
    target.write_bytes(source.read_bytes())
    con = duckdb.connect(str(target))
    con.execute("DELETE FROM core.schema_migrations WHERE version > ?", [version])
    con.execute("INSERT OR REPLACE INTO core.schema_migrations VALUES (?, 'x', now())", [version])
    con.close()
    return target


@pytest.fixture
def places(tmp_path: Path, data_db: Path, bad_files: dict[str, Path]) -> dict[str, str]:
    (tmp_path / "a-file.txt").write_text("not a folder\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine\n")
    names = {"db": data_db, "tmp": tmp_path, "file": tmp_path / "a-file.txt"}
    names |= {"full": tmp_path / "full"} | bad_files
    return {name: str(path) for name, path in names.items()}


def run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def assert_one_line(code: int, out: str, err: str, expected: int, fragment: str) -> None:
    assert "Traceback" not in out + err
    assert code == expected, err
    if expected == 0:
        return
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert fragment in lines[0], err


@pytest.mark.parametrize(("args", "code", "fragment"), ARGS)
def test_bad_arguments(
    capsys: pytest.CaptureFixture[str],
    places: dict[str, str],
    args: list[str],
    code: int,
    fragment: str,
) -> None:
    filled = [a.format(**places) for a in args]
    assert_one_line(*run(capsys, ["--db", places["db"], *filled]), code, fragment)


@pytest.mark.parametrize(("toml", "fragment"), CONFIGS)
def test_bad_config_files(
    capsys: pytest.CaptureFixture[str], places: dict[str, str], toml: str, fragment: str
) -> None:
    config = Path(places["tmp"]) / "config.toml"
    config.write_text(toml + "\n")
    got = run(capsys, ["--config", str(config), "--db", places["db"], "prices"])
    assert_one_line(*got, 2, fragment)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(b"\xff\xfe\x00bad", "invalid config"), (b"a = 1\x00", "invalid config")],
)
def test_config_files_that_are_not_text(
    capsys: pytest.CaptureFixture[str], places: dict[str, str], content: bytes, fragment: str
) -> None:
    config = Path(places["tmp"]) / "config.toml"
    config.write_bytes(content)
    got = run(capsys, ["--config", str(config), "--db", places["db"], "prices"])
    assert_one_line(*got, 2, fragment)


@pytest.mark.parametrize("where", ["{tmp}", "/nonexistent.toml", "{tmp}/missing.toml"])
def test_config_paths_that_are_no_file(
    capsys: pytest.CaptureFixture[str], places: dict[str, str], where: str
) -> None:
    got = run(capsys, ["--config", where.format(**places), "--db", places["db"], "prices"])
    assert_one_line(*got, 2, "config file not found")


@pytest.mark.parametrize(("env", "fragment"), ENVS)
def test_bad_environment(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    places: dict[str, str],
    env: dict[str, str],
    fragment: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert_one_line(*run(capsys, ["--db", places["db"], "prices"]), 2, fragment)


@pytest.mark.parametrize(
    "names",
    [
        ["PRICEADVISOR_FOO"],
        ["PRICEADVISOR_LOG_LEVL"],
        ["PRICEADVISOR_PROVIDER__AZURE__ENABLED", "PRICEADVISOR_DB_PATH"],
    ],
)
def test_unknown_environment_variables_warn_one_line_each(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    places: dict[str, str],
    names: list[str],
) -> None:
    for name in names:
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("PRICEADVISOR_SMTP_PASSWORD", "a secret's variable is known")
    monkeypatch.setenv("PRICEADVISOR_WEB_TOKEN", "so is the dashboard token's")
    code, out, err = run(capsys, ["--db", places["db"], "prices", "-f", "csv"])
    assert code == 0 and out.startswith("provider,")
    expected = [f"warning: ignoring unknown environment variable {n}" for n in sorted(names)]
    assert err.strip().splitlines() == expected


def test_a_renamed_web_token_variable_is_known(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    places: dict[str, str],
    tmp_path: Path,
) -> None:
    config = tmp_path / "renamed.toml"
    config.write_text('[daemon]\nweb_token_env = "PRICEADVISOR_DASH_TOKEN"\n')
    monkeypatch.setenv("PRICEADVISOR_DASH_TOKEN", "the configured token variable")
    code, _, err = run(capsys, ["--config", str(config), "--db", places["db"], "prices"])
    assert code == 0 and "warning" not in err


@pytest.mark.parametrize(("db", "fragment"), DATABASES)
@pytest.mark.parametrize("command", [["prices"], ["sql", "select 1"], ["history"]])
def test_bad_database_paths_for_readers(
    capsys: pytest.CaptureFixture[str],
    places: dict[str, str],
    db: str,
    fragment: str,
    command: list[str],
) -> None:
    got = run(capsys, ["--db", db.format(**places), *command])
    assert_one_line(*got, 1, fragment)


@pytest.mark.parametrize(("db", "fragment"), WRITE_DATABASES)
def test_bad_database_paths_for_a_writer(
    capsys: pytest.CaptureFixture[str], places: dict[str, str], db: str, fragment: str
) -> None:
    got = run(capsys, ["--db", db.format(**places), "fetch", "--offline", "-p", "ecb"])
    assert_one_line(*got, 1, fragment)


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["prices", "--limit", "100000000000000000000000"], 2, "--limit"),
        (["tco", "--gpu", "H100", "--purchase-price", "nan"], 2, "not a finite number"),
        (["--db", "{sqlite}", "prices"], 1, "is a SQLite file"),
        (["--config", "{tmp}/azrue.toml", "prices"], 2, "unknown provider 'azrue'"),
        (["alerts", "silence", "add", "--match", "a=b", "--duration", "999999999d"], 2, "100"),
    ],
)
def test_bad_input_in_a_real_process(
    places: dict[str, str], args: list[str], code: int, fragment: str
) -> None:
    (Path(places["tmp"]) / "azrue.toml").write_text("[providers.azrue]\nenabled = false\n")
    filled = [a.format(**places) for a in args]
    done = cli_process("--db", places["db"], *filled)
    assert_one_line(done.returncode, done.stdout, done.stderr, code, fragment)


@pytest.mark.parametrize(
    ("failure", "line"),
    [
        (OSError(28, "No space left on device", "/var/x"), "No space left on device: /var/x"),
        (duckdb.IOException("IO Error: disk\nmore"), "database error: IO Error: disk"),
        (RuntimeError("boom\nsecond line"), "unexpected RuntimeError: boom"),
    ],
)
def test_an_unforeseen_failure_is_still_one_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    places: dict[str, str],
    failure: Exception,
    line: str,
) -> None:
    """Whatever a command did not turn into a message ends as one line, exit 1."""

    def fail(*_: object, **__: object) -> None:
        raise failure

    monkeypatch.setattr("priceadvisor.store.connections.reader", fail)
    code, _, err = run(capsys, ["--db", places["db"], "prices"])
    assert (code, err.strip()) == (1, f"error: {line}")
