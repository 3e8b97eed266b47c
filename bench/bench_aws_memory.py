"""Peak memory of the AWS adapter's parsing on full-size inputs (target: ≤ 300 MB RSS).

    ./uvw run python bench/bench_aws_memory.py

The AWS inputs are the spot price feed (~3 MB real: every region × every instance type), the
spot advisor file (~0.9 MB) and one on-demand page per region (~50 KB; a full page with every
instance type is generated here at ~0.6 MB). Full-size synthetic versions in the real shapes are
generated, then each is parsed in a fresh process that reports its peak RSS (ru_maxrss) and the
RSS after imports, so the parse's own share is visible.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

FAMILIES = [
    "c5",
    "c6a",
    "c6i",
    "c7g",
    "m5",
    "m6a",
    "m6i",
    "m7g",
    "r5",
    "r6i",
    "r7g",
    "t3",
    "x2idn",
    "i4i",
    "g4dn",
    "g5",
    "g6",
    "g6e",
    "p3",
    "p4d",
    "p5",
    "inf2",
    "trn1",
]
SIZES = [
    "large",
    "xlarge",
    "2xlarge",
    "4xlarge",
    "8xlarge",
    "12xlarge",
    "16xlarge",
    "24xlarge",
    "32xlarge",
    "48xlarge",
    "metal",
]
REGIONS = [f"r{i}-{d}-1" for i in range(33) for d in ("x",)]


def types() -> list[str]:
    return [f"{f}.{s}" for f in FAMILIES for s in SIZES] * 3  # ~760 names like the real feed


def spot_feed(rng: random.Random) -> dict:
    def size(name: str) -> dict:
        return {
            "size": name,
            "valueColumns": [
                {"name": "linux", "prices": {"USD": f"{rng.uniform(0.01, 40):.4f}"}},
                {"name": "mswin", "prices": {"USD": "N/A*"}},
            ],
        }

    groups = [
        {
            "type": "gpuCurrentGen" if i % 5 == 0 else "generalCurrentGen",
            "sizes": [size(t) for t in types()[i::10]],
        }
        for i in range(10)
    ]
    return {
        "vers": 0.01,
        "config": {
            "rate": "perhr",
            "valueColumns": ["linux", "mswin"],
            "currencies": ["USD"],
            "regions": [{"region": r, "instanceTypes": groups} for r in REGIONS],
        },
    }


def advisor(rng: random.Random) -> dict:
    ranges = [
        {"index": i, "label": lbl, "dots": i, "max": m}
        for i, (lbl, m) in enumerate(
            [("<5%", 5), ("5-10%", 11), ("10-15%", 16), ("15-20%", 22), (">20%", 100)]
        )
    ]
    per_region = {t: {"s": rng.randint(10, 90), "r": rng.randint(0, 4)} for t in types()}
    return {
        "instance_types": {t: {"emr": True, "cores": 4, "ram_gb": 16.0} for t in types()},
        "ranges": ranges,
        "spot_advisor": {r: {"Linux": per_region, "Windows": per_region} for r in REGIONS},
        "global_rate": "<10%",
    }


def ondemand(rng: random.Random) -> dict:
    loc = "US East (N. Virginia)"
    rows = {
        f"{t.replace('.', ' ')} US East N. Virginia Linux {i}": {
            "rateCode": "X",
            "price": f"{rng.uniform(0.01, 120):.10f}",
            "Location": loc,
            "Instance Family": "GPU instance" if t[0] in "gp" else "General purpose",
            "vCPU": "8",
            "Instance Type": t,
            "Memory": "32 GiB",
            "Storage": "EBS only",
            "Network Performance": "Up to 10 Gigabit",
            "Operating System": "Linux",
            "Pre Installed S/W": "NA",
            "License Model": "No License required",
        }
        for i, t in enumerate(types())
    }
    return {
        "manifest": {"serviceId": "ec2", "currencyCode": "USD"},
        "regions": {loc: rows},
        "sets": {},
    }


PROBE = """
import resource, sys, pathlib
from priceadvisor.collect.adapters import aws
from priceadvisor.manifest import manifest
known = manifest("aws").instance_types
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path, kind = pathlib.Path(sys.argv[1]), sys.argv[2]
content = path.read_bytes()
if kind == "spot":
    n = len(aws.parse_spot(content, known))
elif kind == "advisor":
    n = sum(len(v) for v in aws.parse_advisor(aws.decode_json_bytes(content)).values())
else:
    n = len(aws.parse_ondemand(aws.decode_json_bytes(content), "US East (N. Virginia)", known))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{kind}: {len(content)/1e6:.2f} MB input, {n} items, RSS after imports {base/1024:.0f} MB,"
      f" peak {peak/1024:.0f} MB")
"""


def main() -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {"spot": spot_feed(rng), "advisor": advisor(rng), "ondemand": ondemand(rng)}
        for kind, document in inputs.items():
            path = Path(tmp) / f"{kind}.json"
            path.write_text(json.dumps(document))
            subprocess.run([sys.executable, "-c", PROBE, str(path), kind], check=True)


if __name__ == "__main__":
    main()
