"""The CLI's two Rich consoles: results on stdout, messages on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

from priceadvisor.cli.output import PIPED_WIDTH

out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = Console(stderr=True, soft_wrap=True)
