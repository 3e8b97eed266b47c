"""Peak memory of the OVHcloud adapter's parse of a full-size public cloud catalog (~8 MB).

    python3 -m uv run python bench/bench_ovh_memory.py [--quick]

The real FR catalog is about 8 MB: every flavour (CPU and GPU, Linux and Windows) in each
billing mode, plus storage, network and AI addons. A catalog of that size is generated in the
recording's shape by repeating its addons under new plan codes (mostly non-GPU, as in the real
catalog), then parsed in a fresh process (JSON decode, GPU filter, quotes) that reports its peak
RSS (ru_maxrss) and the RSS after imports. `--quick` generates a quarter of the size.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

RECORDING = Path(__file__).parent.parent / "providers/recordings/ovh/catalog-fr.json"

CHILD = """
import json, resource, sys
from priceadvisor.collect.adapters.ovh import is_hourly_gpu_flavour, parse_addon, parse_catalog
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
currency, addons = parse_catalog(json.loads(open(sys.argv[1], "rb").read()), "FR")
quotes = [parse_addon(a, currency, "u") for a in addons if is_hourly_gpu_flavour(a)]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(addons), len(quotes), before // 1024, peak // 1024)
"""


def catalog(target_mb: float) -> dict:
    """The recording, its addons repeated under new plan codes until the body reaches target."""
    document = json.loads(RECORDING.read_text())
    originals = list(document["addons"])
    size, copies = len(json.dumps(document)), 0
    while size < target_mb * 1e6:
        copies += 1
        for addon in originals:
            clone = copy.deepcopy(addon)
            clone["planCode"] = f"x{copies}-{addon['planCode']}"
            if copies % 10:  # the real catalog is mostly CPU flavours and other products
                clone["blobs"]["commercial"]["brick"] = "cpu"
            document["addons"].append(clone)
            size += len(json.dumps(clone))
    return document


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    target = 2.0 if parser.parse_args().quick else 8.2
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "catalog.json"
        path.write_text(json.dumps(catalog(target)))
        megabytes = path.stat().st_size / 1e6
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
        ).stdout.split()
    addons, quotes, before, peak = (int(v) for v in out)
    print(
        f"ovh catalog: {megabytes:.2f} MB input, {addons} addons, {quotes} GPU quotes, "
        f"RSS after imports {before} MB, peak {peak} MB"
    )


if __name__ == "__main__":
    main()
