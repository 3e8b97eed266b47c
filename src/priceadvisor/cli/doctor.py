"""How `doctor` shows a data-health report: a verdict, the provider table and what is unmapped."""

from __future__ import annotations

import json

from rich.console import Console

from priceadvisor.cli.output import Format, clean, render, to_json
from priceadvisor.collect.health import HealthReport


def render_report(report: HealthReport, fmt: Format, console: Console) -> None:
    if fmt is Format.JSON:
        console.out(_report_json(report), highlight=False)
        return
    size = f"{report.db_bytes / 1e6:.1f} MB" if report.db_bytes is not None else "missing"
    console.print(
        f"Database: {clean(str(report.db_path))} ({size}, schema v{report.schema_version})",
        markup=False,
        highlight=False,
    )
    render(report.providers, fmt, console, title="Providers")
    render(report.unmapped, fmt, console, title="GPU names with no canonical model")
    if report.rejections.rows:
        render(report.rejections, fmt, console, title="Rejected quotes in the latest runs")
    if report.flagged.rows:
        title = "Flagged offers (kept, left out of cheapest answers; docs/offers-guard.md)"
        render(report.flagged, fmt, console, title=title)
    verdict = "healthy" if report.healthy else "UNHEALTHY: " + "; ".join(report.problems)
    console.print(clean(verdict), markup=False, highlight=False)


def _report_json(report: HealthReport) -> str:
    parts = {
        "db_path": report.db_path,
        "db_bytes": report.db_bytes,
        "schema_version": report.schema_version,
        "healthy": report.healthy,
        "problems": report.problems,
    }
    tables = {
        name: json.loads(to_json(t))
        for name, t in (
            ("providers", report.providers),
            ("unmapped", report.unmapped),
            ("rejections", report.rejections),
            ("flagged", report.flagged),
        )
    }
    return json.dumps(parts | tables, indent=2)
