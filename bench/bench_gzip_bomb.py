"""Peak memory of one fetch that receives a gzip bomb (a small gzip body that inflates to a huge
JSON document), with the size cap and without it.

    python3 -m uv run python bench/bench_gzip_bomb.py            # 448 MiB inflated, ~450 KB sent
    python3 -m uv run python bench/bench_gzip_bomb.py --quick    # 128 MiB inflated

A local HTTP server on 127.0.0.1 sends the bomb with `Content-Encoding: gzip`. Each variant runs
in a fresh process that reports its peak RSS (ru_maxrss), its RSS after imports, and how the
request ended:

- `capped`: HttpSession.get_json with the provider default cap (64 MiB, or --cap): the body is
  inflated chunk by chunk and the transfer abandoned past the cap;
- `uncapped`: what the code did before the cap, httpx reading the whole decoded body and
  json.loads parsing it. It runs under an address-space limit (--limit, 1 GiB like the systemd
  unit's MemoryMax) so that it fails with MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from priceadvisor.collect.http import FetchError, HttpSession, ResponseLimits, build_client
from priceadvisor.config import HttpSettings

MIB = 2**20


def gzip_bomb(inflated: int) -> bytes:
    """`{"prices": [0,0,0,…]}` of `inflated` bytes, gzip-compressed (about 1000:1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"0," * (MIB // 2)
    parts = [packer.compress(b'{"prices": [')]
    parts += [packer.compress(chunk) for _ in range(inflated // len(chunk))]
    return b"".join([*parts, packer.compress(b"0]}"), packer.flush()])


def serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(ConnectionError):  # the capped client hangs up early
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / MIB


async def fetch_capped(url: str, cap: int) -> str:
    settings = HttpSettings(attempts=1)
    async with build_client(settings) as client:
        session = HttpSession(client, settings, limits=ResponseLimits(max_bytes=cap))
        try:
            await session.get_json(url)
        except FetchError as exc:
            return f"FetchError: {exc}"
    return "parsed"


async def fetch_uncapped(url: str) -> str:
    async with httpx.AsyncClient(timeout=60) as client:
        try:
            response = await client.get(url)
            json.loads(response.content)
        except MemoryError:
            return "MemoryError"
    return "parsed"


def child(mode: str, url: str, cap: int, limit: int) -> None:
    baseline = rss_mib()
    if mode == "uncapped":
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        outcome = asyncio.run(fetch_uncapped(url))
    else:
        outcome = asyncio.run(fetch_capped(url, cap))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"mode": mode, "baseline": baseline, "peak": peak, "outcome": outcome}))


def run_child(mode: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--url", url]
    command += ["--cap", str(args.cap), "--limit", str(args.limit)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        return {"mode": mode, "outcome": f"process died ({done.returncode})", "peak": None}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 128 MiB bomb instead of 448")
    parser.add_argument("--inflated", type=int, default=448, help="MiB the bomb inflates to")
    parser.add_argument("--cap", type=int, default=64, help="MiB: the response size cap")
    parser.add_argument("--limit", type=int, default=1024, help="MiB: uncapped address space")
    parser.add_argument("--child", choices=["capped", "uncapped"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.url, args.cap * MIB, args.limit * MIB)
    inflated = (128 if args.quick else args.inflated) * MIB
    bomb = gzip_bomb(inflated)
    server = serve(bomb)
    url = f"http://127.0.0.1:{server.server_address[1]}/prices.json"
    sizes = f"{len(bomb) / 1024:.0f} KB gzip -> {inflated / MIB:.0f} MiB JSON"
    print(f"bomb: {sizes}; cap {args.cap} MiB")
    for mode in ("capped", "uncapped"):
        result = run_child(mode, url, args)
        peak = f"{result['peak']:.0f} MiB" if result.get("peak") else "-"
        base = f"{result['baseline']:.0f} MiB" if result.get("baseline") else "-"
        print(f"{mode:9s} peak RSS {peak:>9s} (after imports {base}): {result['outcome']}")
    server.shutdown()


if __name__ == "__main__":
    main()
