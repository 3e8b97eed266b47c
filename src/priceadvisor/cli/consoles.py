"""The CLI's two Rich consoles: results on stdout, messages on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

# Piped output is not cut to 80 columns: scripts and CI logs get whole tables.
PIPED_WIDTH = 250
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = Console(stderr=True, soft_wrap=True)
