"""A throwaway S3-compatible server for tests: moto in server mode, in its own process on a
free 127.0.0.1 port. It keeps objects in memory and accepts any credentials (it checks none),
so tests pass made-up keys through the same secret path a real deployment uses."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.pg import free_port

START_TIMEOUT_S = 60
# Made-up credentials: moto takes any, and a test can check they never reach a log.
KEY_ID = "AKIAPRICEADVISORTEST"
SECRET = "s3-secret-that-must-never-be-logged"


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # host:port, as DuckDB's S3 secret takes it

    @property
    def url(self) -> str:
        return f"http://{self.endpoint}"

    def create_bucket(self, name: str) -> str:
        """An empty bucket (S3 CreateBucket: PUT /<bucket>); returns its s3:// URL."""
        httpx.put(f"{self.url}/{name}", timeout=10).raise_for_status()
        return f"s3://{name}"

    def keys(self, bucket: str) -> list[str]:
        """Object keys in the bucket (ListObjectsV2), for tests that check files landed."""
        answer = httpx.get(f"{self.url}/{bucket}", params={"list-type": "2"}, timeout=10)
        answer.raise_for_status()
        return [part.split("</Key>")[0] for part in answer.text.split("<Key>")[1:]]


def _moto_server() -> str:
    return str(Path(sys.executable).with_name("moto_server"))


def _wait_ready(server: S3Server, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(server.url, timeout=1)
            return
        time.sleep(0.2)
    raise RuntimeError(f"moto_server did not answer on {server.endpoint}")


@contextlib.contextmanager
def start_s3() -> Iterator[S3Server]:
    port = free_port()
    proc = subprocess.Popen(
        [_moto_server(), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = S3Server(f"127.0.0.1:{port}")
    try:
        _wait_ready(server, proc)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
