"""The digest's optional PNG price chart (the `chart` extra: matplotlib).

Eight weekly minima of $/GPU-hour for the cheapest GPU models, drawn as lines; sent as an inline
(CID) image the HTML email references, so the mail still reads without it.
"""

from __future__ import annotations

import io
from typing import Any

CID = "price-chart"
MAX_SERIES = 6


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
    rows = [r for r in gpu_prices if r["pricing"] == "on_demand"]
    rows = sorted(rows, key=lambda r: r["now_price"])[:MAX_SERIES]
    figure, axes = pyplot.subplots(figsize=(7, 3.2), dpi=100)
    weeks = list(range(-len(rows[0]["series"]) + 1, 1)) if rows else []
    for row in rows:
        axes.plot(weeks, row["series"], marker="o", linewidth=1.5, label=row["gpu_model"])
    axes.set_xlabel("weeks ago")
    axes.set_ylabel("cheapest $/GPU-hour (on-demand)")
    axes.grid(alpha=0.3)
    if rows:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    pyplot.close(figure)
    return buffer.getvalue()
