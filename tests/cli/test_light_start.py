"""The light start of `prices` (cli/light.py) prints what the Typer command prints, byte for
byte, with the same exit code; it answers the common command lines itself, without importing
Typer, Rich, pydantic or logging, and hands everything else to the Typer app."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from rich.console import Console

from priceadvisor.cli import app, light, plaintable
from priceadvisor.cli import prices as layout
from priceadvisor.cli.prices import Shown
from priceadvisor.store import connections, reads

Outcome = tuple[int, str, str]


@pytest.fixture(scope="module")
def recorded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every provider's recorded responses, fetched by the CLI's own offline fetch."""
    db = tmp_path_factory.mktemp("light") / "recorded.duckdb"
    with pytest.raises(SystemExit) as done:
        app.main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    assert done.value.code in (0, None)
    return db


@pytest.fixture(scope="module")
def live_db(recorded_db: Path) -> Path:
    """The same offers as if fetched live: the runs say so (the table then has no note about
    recorded responses, which only the manifests can word)."""
    db = recorded_db.with_name("live.duckdb")
    shutil.copy(recorded_db, db)
    con = duckdb.connect(str(db))
    try:
        con.execute("UPDATE core.fetch_runs SET source = 'live'")
    finally:
        con.close()
    return db


def _outcome(capsys: pytest.CaptureFixture[str], entry: object, args: list[str]) -> Outcome:
    with pytest.raises(SystemExit) as done:
        entry(args)  # type: ignore[operator]
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def both(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> tuple[Outcome, Outcome, bool]:
    """(the light start's outcome, the Typer app's, whether the light start answered)."""
    handed: list[list[str]] = []
    typer_main = app.main

    def recorded(argv: list[str] | None = None) -> None:
        handed.append(list(argv or []))
        typer_main(argv)

    with monkeypatch.context() as patched:
        patched.setattr(app, "main", recorded)
        lit = _outcome(capsys, light.main, args)
    full = _outcome(capsys, app.main, args)
    return lit, full, not handed


# The offers' own values: a family with H100s, a country and continent with offers, an
# accelerator family; an unknown value of each; formats, columns, sorts, limits.
CASES: list[list[str]] = [
    [],
    ["--gpu", "H100", "--pricing", "spot"],
    ["--gpu", "H100"],
    ["--gpu=H100", "--format=csv"],
    ["--gpu", "H100", "--format", "json"],
    ["-f", "csv"],
    ["-f", "json", "--limit", "7"],
    ["--format", "csv", "--columns", "provider,gpu-hour,region"],
    ["--columns", "gpu_model,price_hour_usd,available", "--limit", "20"],
    ["--columns", "region"],
    ["--columns", "n"],
    ["--wide"],
    ["--wide", "--limit", "5", "--sort", "provider"],
    ["--pricing", "reserved"],
    ["--pricing", "market"],
    ["--pricing", "on-demand", "--sort", "hour", "--limit", "3"],
    ["--include-derived", "--sort", "gpu"],
    ["--include-flagged"],
    ["--include-flagged", "--format", "json", "--gpu", "A100"],
    ["--country", "DE"],
    ["--country", "Germany", "--format", "csv"],
    ["--continent", "Europe", "--limit", "4"],
    ["--eu", "--gpu", "L40S"],
    ["--gpu", "TPU-V5E", "--wide"],
    ["--gpu", "GAUDI2"],
    ["--gpu", "H100-S*", "-v"],
    ["--verbose", "--limit", "2"],
    ["--gpu", "H100", "--country", "IS"],  # nothing matches
    ["--as-of", "2001-01-01T00:00", "--format", "csv"],
    ["--as-of", "2001-01-01"],
    ["--gpu", ""],
    ["--limit", "1000000000"],
    # refused: the same one line and exit code either way
    ["--country", "XX"],
    ["--continent", "Atlantis"],
    ["--gpu", "NOPE-9000"],
    ["--sort", "bogus"],
    ["--columns", "bogus,region"],
    ["--columns", ""],
    ["--pricing", "free"],
    ["--as-of", "yesterday"],
    ["--gpu", "H100", "--country", "XX", "--sort", "bogus"],  # which error comes first
    ["--limit", "0"],
    ["--limit", "abc"],
    ["--limit", "1000000001"],
    ["--format", "yaml"],
    ["--bogus"],
    ["--eu=yes"],
    ["--gpu"],
    ["--gpu", "--eu"],
    ["--limit", "3", "--limit", "4"],
    ["extra"],
    ["--help"],
    ["--provider", "aws", "--limit", "3"],
    ["--provider", "nope"],
]


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_the_light_start_prints_what_the_typer_app_prints(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    live_db: Path,
    recorded_db: Path,
    args: list[str],
) -> None:
    for db in (live_db, recorded_db):
        lit, full, _ = both(capsys, monkeypatch, ["--db", str(db), "prices", *args])
        assert lit == full, db.name


ANSWERED = [
    [],
    ["--gpu", "H100", "--pricing", "spot"],
    ["--gpu=H100", "--format=csv"],
    ["-f", "json", "--limit", "7"],
    ["--wide"],
    ["--pricing", "reserved"],
    ["--include-flagged"],
    ["--country", "Germany", "--format", "csv"],
    ["--gpu", "H100", "--country", "IS"],
    ["--as-of", "2001-01-01"],
    ["--country", "XX"],  # an error the light start words itself
    ["--sort", "bogus"],
]


@pytest.mark.parametrize("args", ANSWERED, ids=" ".join)
def test_common_command_lines_are_answered_by_the_light_start(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    live_db: Path,
    recorded_db: Path,
    args: list[str],
) -> None:
    for db in (live_db, recorded_db):
        assert both(capsys, monkeypatch, ["--db", str(db), "prices", *args])[2], db.name


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--limit", "0"],
        ["--format", "yaml"],
        ["--provider", "aws"],
        ["--gpu", "--eu"],
        ["extra"],
    ],
    ids=" ".join,
)
def test_what_the_light_start_cannot_read_goes_to_the_typer_app(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    live_db: Path,
    args: list[str],
) -> None:
    assert not both(capsys, monkeypatch, ["--db", str(live_db), "prices", *args])[2]


@pytest.mark.parametrize(
    "args", [[], ["--verbose"], ["--gpu", "H100", "--limit", "3"]], ids=" ".join
)
def test_recorded_prices_are_answered_by_the_light_start(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    recorded_db: Path,
    args: list[str],
) -> None:
    """The note naming recorded providers needs the manifests' `kind` alone (ecb's exchange
    rates and openrouter's token prices are recorded too, and never named): read without
    pydantic, the same bytes."""
    lit, full, answered = both(capsys, monkeypatch, ["--db", str(recorded_db), "prices", *args])
    assert answered and lit == full and "recorded responses" in lit[1]
    assert "ecb" not in lit[1] and "openrouter" not in lit[1]


def test_every_manifests_kind_reads_as_the_model_reads_it() -> None:
    from priceadvisor.manifest import manifest, manifest_ids
    from priceadvisor.manifest_files import declared_kind

    kinds = {p: declared_kind(p) for p in manifest_ids()}
    assert kinds == {p: manifest(p).kind for p in manifest_ids()}
    assert {"prices", "fx", "api"} <= set(kinds.values())


@pytest.mark.parametrize(
    "broken",
    ['kind = "gold"\n', 'kind = ["prices"\n', "id = 'other'\n"],
    ids=["kind", "toml", "id"],
)
def test_a_manifest_the_light_start_cannot_read_goes_to_the_typer_app(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    recorded_db: Path,
    tmp_path: Path,
    broken: str,
) -> None:
    """A recorded provider whose manifest is broken: the Typer app words the error."""
    from priceadvisor import manifest, manifest_files
    from priceadvisor.resources import providers_dir

    shutil.copytree(
        providers_dir(), tmp_path / "providers", ignore=shutil.ignore_patterns("recordings")
    )
    vast = tmp_path / "providers" / "vast.toml"
    lines = [ln for ln in vast.read_text().splitlines(keepends=True) if not ln.startswith("id ")]
    vast.write_text(broken + ("" if broken.startswith("id") else 'id = "vast"\n') + "".join(lines))
    monkeypatch.setattr(manifest_files, "providers_dir", lambda: tmp_path / "providers")
    manifest.manifest.cache_clear()
    try:
        lit, full, answered = both(capsys, monkeypatch, ["--db", str(recorded_db), "prices"])
    finally:
        manifest.manifest.cache_clear()
    assert not answered and lit == full and lit[0] == 1 and "vast" in lit[2]


@pytest.mark.parametrize(
    "before",
    [
        ["--db={db}"],
        ["--config", "{config}"],
        ["--config={config}", "--db", "{db}"],
        ["--db", "{db}", "--db", "{db}"],
        ["--version"],
        ["--db", "{missing}"],
    ],
    ids=" ".join,
)
def test_global_options_and_configuration(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    live_db: Path,
    tmp_path: Path,
    before: list[str],
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{live_db}"\nlock_timeout = "5s"\n')
    values = {"db": live_db, "config": config, "missing": tmp_path / "none.duckdb"}
    args = [arg.format(**values) for arg in before]
    lit, full, _ = both(capsys, monkeypatch, [*args, "prices", "--limit", "3"])
    assert lit == full


def test_a_configuration_only_the_full_load_reads_goes_to_the_typer_app(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    live_db: Path,
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{live_db}"\n[http]\nattempts = 3\n')
    lit, full, answered = both(capsys, monkeypatch, ["--config", str(config), "prices"])
    assert lit == full and lit[0] == 0 and not answered
    config.write_text(f'db = "{live_db}"\n[http]\nattempts = "many"\n')
    lit, full, answered = both(capsys, monkeypatch, ["--config", str(config), "prices"])
    assert lit == full and lit[0] == 2 and not answered


# --- a fresh process: what the light start imports, and a terminal ------------------------

NEVER = ("typer", "click", "rich", "pydantic", "pydantic_settings", "logging")
# Nor, reading a DuckDB file, the lake or the dataclasses module (with inspect, ~5 ms a start).
NEVER += ("dataclasses", "priceadvisor.store.lake")
SCRIPT = """
import json, sys
from priceadvisor.cli.light import main
try:
    main(sys.argv[2:])
except SystemExit as done:
    code = done.code
loaded = [m for m in json.loads(sys.argv[1]) if m in sys.modules]
print(json.dumps({"code": code, "loaded": loaded}))
"""


def _fresh(args: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(NEVER), *args],
        env=clean | (env or {}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize(
    "args",
    [
        ["--gpu", "H100", "--pricing", "spot"],
        ["--format", "json", "--country", "DE"],
        ["--format", "csv", "--wide"],
        ["--country", "XX"],
    ],
    ids=" ".join,
)
def test_the_light_start_imports_no_typer_rich_pydantic_or_logging(
    live_db: Path, args: list[str]
) -> None:
    report = _fresh(["--db", str(live_db), "prices", *args])
    expected_code = 2 if "XX" in args else 0
    # An error is printed by Rich (the Typer app's words): only that loads it. --country reads
    # the region catalog (gpu_specs, dataclasses).
    allowed = {"rich", "dataclasses"} if expected_code else set()
    allowed |= {"dataclasses"} if "--country" in args else set()
    assert report["code"] == expected_code
    assert set(report["loaded"]) <= allowed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "rich"),
    [([], False), (["--wide", "--limit", "3"], False), (["--verbose"], True)],
    ids=str,
)
def test_recorded_prices_load_neither_typer_nor_pydantic(
    recorded_db: Path, args: list[str], rich: bool
) -> None:
    """The recorded-providers note reads the manifests' `kind` with tomllib alone. A table
    plain text cannot draw as Rich would (--verbose names more providers than 250 columns
    hold: Rich wraps the note) is Rich's: Rich alone."""
    report = _fresh(["--db", str(recorded_db), "prices", *args])
    assert report["code"] == 0
    assert set(report["loaded"]) == ({"rich", "dataclasses"} if rich else set())  # type: ignore[arg-type]


def test_the_typer_app_takes_over_when_it_must(live_db: Path) -> None:
    report = _fresh(["--db", str(live_db), "prices", "--help"])
    assert report["code"] == 0 and "typer" in report["loaded"]  # type: ignore[operator]


# Run under a pseudo-terminal: the entry point, then which of NEVER it loaded (into a file, so
# the terminal's bytes are the command's alone).
TERMINAL_SCRIPT = """
import atexit, json, sys
def record():
    with open(sys.argv[1], "w") as f:
        json.dump([m for m in json.loads(sys.argv[2]) if m in sys.modules], f)
atexit.register(record)
from {entry} import main
main(sys.argv[3:])
"""
TERMINALS = [{}, {"FORCE_COLOR": "1"}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1", "NO_COLOR": "1"}]


@pytest.mark.parametrize("env", TERMINALS, ids=lambda env: "+".join(env) or "plain")
@pytest.mark.parametrize("width", [40, 80, 132])
def test_a_terminal_gets_richs_table_from_the_light_start(
    recorded_db: Path, tmp_path: Path, env: dict[str, str], width: int
) -> None:
    """Rich styles a terminal's table and sizes it to the window: the light start prints it
    with Rich, through the Typer command's code, still without Typer, pydantic or logging.
    Under a pseudo-terminal of each width, both entry points print the same bytes (40 columns
    is narrower than the table: Rich shrinks place names and wraps the notes)."""
    pty = pytest.importorskip("pty")
    outputs, loaded = [], []
    for entry in ("priceadvisor.cli.light", "priceadvisor.cli.app"):
        modules = tmp_path / f"{entry}.json"
        code = TERMINAL_SCRIPT.format(entry=entry)
        args = [str(modules), json.dumps(NEVER), "--db", str(recorded_db), "prices", "--limit", "5"]
        outputs.append(_in_terminal(pty, [sys.executable, "-c", code, *args], env, width))
        loaded.append(set(json.loads(modules.read_text())))
    assert outputs[0] == outputs[1]
    assert b"\x1b[" in outputs[0] and b"recorded responses" in outputs[0]
    assert loaded[0] == {"rich", "dataclasses"} and "typer" in loaded[1]


def _in_terminal(pty: object, command: list[str], env: dict[str, str], width: int) -> bytes:
    import fcntl
    import struct
    import termios

    leader, follower = pty.openpty()  # type: ignore[attr-defined]
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, width, 0, 0))
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        clean.pop(name, None)
    clean |= {"TERM": "xterm-256color", "COLUMNS": str(width), "LINES": "24"} | env
    child = subprocess.Popen(command, stdout=follower, stderr=follower, env=clean)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the child has finished
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=120) == 0
    return b"".join(chunks)


@pytest.mark.parametrize("env", [{"FORCE_COLOR": "1"}, {"TTY_COMPATIBLE": "1"}], ids=str)
def test_a_pipe_rich_treats_as_a_terminal_gets_the_same_bytes(
    live_db: Path, env: dict[str, str]
) -> None:
    """FORCE_COLOR on a pipe (CI logs): Rich styles the table at the piped width."""
    outputs = []
    for entry in ("priceadvisor.cli.light", "priceadvisor.cli.app"):
        code = f"import sys; from {entry} import main; main(sys.argv[1:])"
        command = [sys.executable, "-c", code, "--db", str(live_db), "prices", "--limit", "5"]
        clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
        clean.pop("NO_COLOR", None)
        done = subprocess.run(command, env=clean | env, capture_output=True, timeout=120)
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1] and outputs[0][0] == 0


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_a_stdout_that_is_not_utf8_gets_the_typer_apps_output(recorded_db: Path, fmt: str) -> None:
    """Rich draws an ASCII box there and words what it cannot encode."""
    outputs = []
    for entry in ("priceadvisor.cli.light", "priceadvisor.cli.app"):
        code = f"import sys; from {entry} import main; main(sys.argv[1:])"
        args = ["--db", str(recorded_db), "prices", "--limit", "3", "--format", fmt]
        clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PRICEADVISOR_")}
        env = clean | {"PYTHONIOENCODING": "ascii"}
        done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True)
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1] and b"Traceback" not in outputs[0][2]


# --- the plain table against Rich's, at many widths ----------------------------------------


def _rich_text(title: str, table: reads.Table, noun: layout.Noun, width: int) -> str:
    console = Console(width=width, soft_wrap=True, color_system=None, file=io.StringIO())
    console.print(layout.to_rich(table, title, [], noun))
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("fields", [layout.DEFAULT, tuple(layout.FIELDS), ("n",), ("region",)])
def test_the_plain_table_is_richs_wherever_it_draws_one(
    live_db: Path, fields: tuple[str, ...]
) -> None:
    with connections.reader(live_db) as con:
        table = reads.prices(con, reads.OfferFilter(), "gpu-hour", 60, layout.view_columns(fields))
    columns = layout.shown_columns(table)
    cells = layout.shown_cells(table)
    natural = sum(max(len(c.header), *(len(r[i]) for r in cells)) for i, c in enumerate(columns))
    natural += len(columns) - 1
    drawn_at = []
    for width in sorted({20, 40, 80, 120, 250, natural - 1, natural, natural + 1} - {0}):
        drawn = plaintable.draw("Current GPU offers (USD)", columns, cells, width)
        if drawn is not None:
            drawn_at.append(width)
            assert drawn == _rich_text("Current GPU offers (USD)", table, "GPU", width), width
    assert natural in drawn_at and natural - 1 not in drawn_at


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [["", "", ""]],
        [["a b", "1", ""], ["long place name", "12.5", "x"]],
        [["x", "", "yes"]],
    ],
)
def test_edge_cells_are_drawn_as_rich_draws_them(rows: list[list[str]]) -> None:
    columns = [Shown("region", True, False), Shown("$/h", False, True), Shown("k", False, False)]
    for width in (5, 12, 30, 250):
        drawn = plaintable.draw("A title wider than the table", columns, rows, width)
        if drawn is not None:
            assert drawn == _rich_rows("A title wider than the table", columns, rows, width)


def _rich_rows(title: str, columns: list[Shown], rows: list[list[str]], width: int) -> str:
    """Rich's table of these exact cells, built as layout.to_rich builds it."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=Text(title),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),
        header_style="bold",
    )
    for c in columns:
        table.add_column(
            Text(c.header),
            justify="right" if c.right else "left",
            no_wrap=not c.wraps,
            overflow="ellipsis" if c.wraps else "fold",
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console = Console(width=width, soft_wrap=True, color_system=None, file=io.StringIO())
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_cells_rich_would_change_are_left_to_rich() -> None:
    columns = [Shown("region", True, False)]
    for cell in ("two  spaces", " leading", "trailing ", "tab\there", "wide 東京", "a\nb"):
        assert plaintable.draw("t", columns, [[cell]], 250) is None, cell
    assert plaintable.note_line("x" * 251, 250) is None
    assert plaintable.note_line("accelerators (TPU, Gaudi, Trainium…)", 250) is not None


def test_the_light_starts_options_are_the_typer_commands() -> None:
    """Every option the light start reads is one the Typer command has, by the same name."""
    import typer.main

    group = typer.main.get_command(app.app)
    command = group.commands["prices"]  # type: ignore[attr-defined]
    names = {name for p in command.params for name in p.opts}
    assert set(light.VALUES) | set(light.FLAGS) <= names
    assert names - set(light.VALUES) - set(light.FLAGS) == {"--provider", "-p"}
    global_names = {name for p in group.params for name in p.opts}
    assert global_names - set(light.GLOBALS) == {"--version"}
