"""A read-only Python API over the public views, for notebooks (docs/python-api.md).

import priceadvisor.api as pa

data = pa.open()                      # the CLI's config and database (or lake)
data.offers(gpu="H100", pricing="spot").df()
"""

from __future__ import annotations

from priceadvisor.api.data import PriceData, open
from priceadvisor.api.errors import PriceDataError
from priceadvisor.api.results import MissingLibraryError, Result

__all__ = ["MissingLibraryError", "PriceData", "PriceDataError", "Result", "open"]
