"""A throwaway PostgreSQL server for tests, started from Debian's binaries.

The server runs in a fresh directory on a free 127.0.0.1 port and is stopped (and its files
removed) at the end. initdb and postgres refuse to run as root, so as root the server runs as
the `postgres` system user (created by Debian's package) through `runuser`. Without the
binaries, `start_postgres` raises `PostgresUnavailable`, which the fixture turns into a skip.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
START_TIMEOUT_S = 60


class PostgresUnavailable(RuntimeError):
    """PostgreSQL's server binaries are not installed here."""


def pg_bin() -> Path:
    for folder in PG_BIN_DIRS:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin "
        "(apt-get install postgresql)"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    """Root cannot run initdb/postgres: drop to the `postgres` user for them."""
    if os.geteuid() != 0:
        return argv
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise PostgresUnavailable(
            "running as root and no `postgres` user to run the server"
        ) from exc
    # util-linux puts runuser in /usr/sbin, which a non-login root shell's PATH may lack.
    runuser = shutil.which("runuser", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if runuser is None:
        raise PostgresUnavailable("running as root and no `runuser` to drop to `postgres`")
    return [runuser, "-u", "postgres", "--", *argv]


def _own_for_server(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _run(argv: list[str]) -> None:
    result = subprocess.run(_as_server_user(argv), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {result.stderr.strip() or result.stdout.strip()}")


def _wait_ready(bindir: Path, port: int, sockdir: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    argv = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
    while time.monotonic() < deadline:
        if subprocess.run(argv, capture_output=True, check=False).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"PostgreSQL did not accept connections on port {port} (logs in {sockdir})")


@contextlib.contextmanager
def start_postgres() -> Iterator[str]:
    """Run a PostgreSQL server for the block; yields a libpq DSN for database `postgres`."""
    bindir = pg_bin()
    # Not under pytest's tmp_path: that is private to root (0700); the server runs as `postgres`.
    base = Path(tempfile.mkdtemp(prefix="priceadvisor-pg-"))
    base.chmod(0o755)
    _own_for_server(base)
    data, port = base / "data", free_port()
    try:
        _run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8"]
        )
        options = f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off -c max_connections=100"
        _run(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(base / "log"),
                "-w",
                "start",
            ]
        )
        _wait_ready(bindir, port, base)
        yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    finally:
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"])
        shutil.rmtree(base, ignore_errors=True)


def create_database(dsn: str, name: str) -> str:
    """A new empty database on the server behind `dsn`; returns its DSN."""
    bindir = pg_bin()
    fields = dict(part.split("=", 1) for part in dsn.split())
    argv = [
        str(bindir / "createdb"),
        "-h",
        fields["host"],
        "-p",
        fields["port"],
        "-U",
        fields["user"],
        name,
    ]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"createdb failed: {result.stderr.strip()}")
    return f"host={fields['host']} port={fields['port']} user={fields['user']} dbname={name}"


def password_role(dsn: str, role: str, password: str) -> str:
    """A role that must log in with `password` (scram) and owns a new database; its DSN
    (without the password)."""
    fields = dict(part.split("=", 1) for part in dsn.split())
    psql = [str(pg_bin() / "psql"), "-At", "-h", fields["host"], "-p", fields["port"]]
    psql += ["-U", fields["user"], "-d", fields["dbname"], "-c"]

    def run(sql: str) -> str:
        done = subprocess.run([*psql, sql], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    run(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    run(f"CREATE DATABASE {role} OWNER {role}")
    hba = Path(run("SHOW hba_file"))
    hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    run("SELECT pg_reload_conf()")
    return f"host={fields['host']} port={fields['port']} user={role} dbname={role}"
