"""The digest's optional PNG price chart (the `chart` extra: matplotlib).

Eight weekly minima of $/GPU-hour for the reader's GPUs (digest.chart_rows), one line per GPU
and pricing, spot dashed; sent as an inline (CID) image the HTML email references, so the mail
still reads without it.
"""

from __future__ import annotations

import io
from typing import Any

CID = "price-chart"
MAX_SERIES = 8


class ChartUnavailable(RuntimeError):
    """matplotlib is not installed (pip install 'priceadvisor[chart]')."""


def price_chart(gpu_prices: list[dict[str, Any]]) -> bytes:
    try:
        import matplotlib  # noqa: PLC0415 - optional extra, imported only when asked for

        matplotlib.use("Agg")
        from matplotlib import pyplot  # noqa: PLC0415
    except ImportError:
        raise ChartUnavailable(
            "the chart needs matplotlib: pip install 'priceadvisor[chart]'"
        ) from None
    rows = gpu_prices[:MAX_SERIES]
    figure, axes = pyplot.subplots(figsize=(7, 3.2), dpi=100)
    weeks = list(range(-len(rows[0]["series"]) + 1, 1)) if rows else []
    colours: dict[str, str] = {}
    for row in rows:
        spot = row["pricing"] == "spot"
        colour = colours.setdefault(row["gpu_model"], f"C{len(colours) % 10}")
        axes.plot(
            weeks,
            row["series"],
            marker="o",
            linewidth=1.5,
            color=colour,
            linestyle="--" if spot else "-",
            label=f"{row['gpu_model']} {'spot' if spot else 'on-demand'}",
        )
    axes.set_xlabel("weeks ago")
    axes.set_ylabel("cheapest $/GPU-hour")
    axes.grid(alpha=0.3)
    if rows:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    pyplot.close(figure)
    return buffer.getvalue()
