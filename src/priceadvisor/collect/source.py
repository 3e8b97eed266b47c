"""What every reader of a source shares, below the adapters and the page toolkit alike."""

from __future__ import annotations


class SourceFormatError(Exception):
    """The source answered, but not in the format this adapter reads (schema or layout drift)."""


def require_complete_html(html: str) -> str:
    """A page cut short still parses, with rows missing, and missing rows would read as offers
    that vanished: refuse a page that does not end."""
    if "</html>" not in html[-4096:].lower():
        raise SourceFormatError("the page ends before </html> (truncated?)")
    return html
