"""The Python API's one error type for what a user acts on."""

from __future__ import annotations


class PriceDataError(ValueError):
    """Bad input (an unknown GPU, country, provider, workload, an invalid workload field), an
    invalid config or a database that cannot be read; the message is the CLI's one line."""
