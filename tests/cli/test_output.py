"""Every DuckDB type prints in every format; provider text is never markup or terminal codes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from priceadvisor.records import RawQuote, RunStatus
from tests.conftest import cli, ingest_quotes

# (DuckDB expression, the JSON value expected for it, or ... where it varies by run)
TYPES: dict[str, tuple[str, object]] = {
    "boolean": ("true", True),
    "tinyint": ("-1::TINYINT", -1),
    "ubigint": ("18446744073709551615::UBIGINT", 18446744073709551615),
    "hugeint": (
        "170141183460469231731687303715884105727::HUGEINT",
        170141183460469231731687303715884105727,
    ),
    "uhugeint": ("1::UHUGEINT", 1),
    "bignum": ("(2::BIGNUM) ^ 100", ...),
    "float_nan": ("'nan'::FLOAT", None),
    "double_inf": ("'-inf'::DOUBLE", None),
    "decimal": ("1.25::DECIMAL(10,2)", 1.25),
    "decimal38": ("12345678901234567890.5::DECIMAL(38,2)", 12345678901234567890.5),
    "varchar": ("'naïve'", "naïve"),
    "blob": ("'\\xAA\\x00'::BLOB", "aa00"),
    "bit": ("'0101'::BIT", "0101"),
    "date": ("DATE '2024-02-29'", "2024-02-29"),
    "time": ("TIME '12:00:01'", "12:00:01"),
    "timetz": ("'12:00:00+02'::TIMETZ", "12:00:00+02:00"),
    "timestamp": ("TIMESTAMP '2024-01-01 10:00:00'", "2024-01-01T10:00:00"),
    "timestamp_ns": ("'2024-01-01 00:00:00.123456789'::TIMESTAMP_NS", ...),
    "timestamptz": ("TIMESTAMPTZ '2024-01-01 10:00:00+00'", "2024-01-01T10:00:00+00:00"),
    "now": ("now()", ...),
    "interval": ("INTERVAL '2 days 3 hours'", 183600.0),
    "uuid": (
        "'6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    ),
    "json": ("'{\"a\": 1}'::JSON", '{"a": 1}'),
    "enum": ("'b'::ENUM('a', 'b')", "b"),
    "list": ("[1, NULL, 3]", [1, None, 3]),
    "array": ("[1.5, 2]::DOUBLE[2]", [1.5, 2.0]),
    "struct": ("{'a': 1, 'b': [TIMESTAMPTZ '2024-01-01 00:00:00+00']}", ...),
    "map": ("MAP {'k': 1}", {"k": 1}),
    "map_list_keys": ("MAP {[1, 2]: 'x'}", ...),
    "nested": ("[{'m': MAP {1: INTERVAL 1 second}, 'u': uuid()}]", ...),
    "union": ("union_value(n := 1)", 1),
    "null": ("NULL", None),
}


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_every_type_prints_in_every_format(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, name: str, fmt: str
) -> None:
    expression, expected = TYPES[name]
    query = f"SELECT {expression} AS v, 'after' AS w"
    code, out, err = cli(capsys, "--db", str(migrated_db), "sql", "-f", fmt, query)
    assert (code, err) == (0, "")
    if fmt == "json":
        [record] = json.loads(out)
        assert record["w"] == "after"
        if expected is not ...:
            assert record["v"] == expected
    elif fmt == "csv":
        header, row = list(csv.reader(io.StringIO(out)))
        assert header == ["v", "w"] and row[1] == "after"
    else:
        assert "after" in out


def test_timestamps_with_zone_keep_their_offset(
    capsys: pytest.CaptureFixture[str], migrated_db: Path
) -> None:
    query = "SELECT TIMESTAMPTZ '2024-01-01 10:00:00+00' AS t"
    _, out, _ = cli(capsys, "--db", str(migrated_db), "sql", "-f", "csv", query)
    assert out.splitlines() == ["t", "2024-01-01 10:00:00+0000"]


HOSTILE_TEXT = (
    "eu[/]west [link=https://evil.example]x[/link] \x1b]8;;https://evil\x07a\x1b[2J\x9b31m\rend"
)


def test_sql_prints_markup_literally_and_drops_control_codes(
    capsys: pytest.CaptureFixture[str], migrated_db: Path
) -> None:
    literal = HOSTILE_TEXT.replace("'", "''")
    query = f"SELECT '{literal}' AS \"[bold]col\""
    for fmt in ("table", "csv"):
        code, out, err = cli(capsys, "--db", str(migrated_db), "sql", "-f", fmt, query)
        assert (code, err) == (0, "")
        assert "[/]" in out and "[link=https://evil.example]" in out and "[bold]col" in out
        assert not any(c in out for c in "\x1b\x07\x9b\r")
    _, out, _ = cli(capsys, "--db", str(migrated_db), "sql", "-f", "json", query)
    assert json.loads(out) == [{"[bold]col": HOSTILE_TEXT}]
    assert not any(c in out for c in "\x1b\x07\x9b\r")  # escaped as \\uXXXX, not raw


@pytest.fixture
def hostile_db(db_path: Path) -> Path:
    quote = RawQuote(
        region=HOSTILE_TEXT,
        instance_type="[red]Standard_NC24ads_A100_v4[/]",
        pricing="on_demand",
        price=3.0,
        gpu_name_raw="A100 80GB",
        gpu_memory_gb=80.0,
        gpu_count=1.0,
    )
    ingest_quotes(db_path, "azure", [quote])
    ingest_quotes(db_path, "vast", [], RunStatus.FAILED, "HTTP 500 [/] \x1b[31mred")
    return db_path


@pytest.mark.parametrize(
    "command",
    [
        ["prices"],
        ["prices", "-f", "csv"],
        ["history"],
        ["history", "-f", "csv"],
        ["doctor"],
        ["sql", "select provider, region, instance_type, gpu_name_raw from offers"],
        ["sql", "select * from fetch_runs"],
    ],
)
def test_provider_text_is_not_markup_in_any_command(
    capsys: pytest.CaptureFixture[str], hostile_db: Path, command: list[str]
) -> None:
    code, out, err = cli(capsys, "--db", str(hostile_db), *command)
    assert code in (0, 1), err  # doctor: 1 = unhealthy
    assert "Traceback" not in err
    assert "[/]" in out
    assert not any(c in out for c in "\x1b\x07\x9b\r")


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_a_small_number_never_prints_as_zero(
    capsys: pytest.CaptureFixture[str], migrated_db: Path, fmt: str
) -> None:
    """A per-token price (OpenRouter lists $0.00000006 a token) printed as 0, and a small
    negative difference as -0: four significant digits where four decimals show nothing."""
    query = "SELECT 6e-8::DOUBLE AS per_token, -0.00002::DOUBLE AS diff, 0.5446910617::DOUBLE AS p"
    code, out, err = cli(capsys, "--db", str(migrated_db), "sql", "-f", fmt, query)
    assert (code, err) == (0, "")
    for shown in ("6e-08", "-2e-05", "0.5447"):
        assert shown in out
    assert "-0 " not in out and ",0," not in out
