"""Leave-one-source-out accuracy of the sizing estimator as it was at an older commit, on
today's calibration cases (sizing-data/calibration.toml of the working tree): the "session start"
column of docs/accuracy.md. Needs the git history:

    python3 -m uv run python bench/sizing_accuracy_at.py a6d3b6e

The old code's `calibration.summary()` runs in a subprocess on a copy of its `src/` and
`providers/` with today's cases swapped in; case keys it does not know are ignored (the
session-start code reads no `tpot_ms_max`, so MLPerf Server rows are sized unconstrained).
"""

import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = """
from priceadvisor.sizing import calibration as c
print("regime,cases,sources,median_abs_error_pct,p90_abs_error_pct,in_range_pct")
for s in c.summary():
    print(f"{s.regime},{s.cases},{s.sources},{100 * s.median:.1f},{100 * s.p90:.1f},"
          f"{100 * s.in_range:.1f}")
"""


def checkout(commit: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", commit, "src", "providers"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    shutil.copy(ROOT / "providers" / "calibration.toml", into / "providers" / "calibration.toml")


def main(commit: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        checkout(commit, Path(tmp))
        env = {"PYTHONPATH": str(Path(tmp) / "src"), "PATH": ""}
        subprocess.run([sys.executable, "-c", REPORT], env=env, check=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "a6d3b6e")
