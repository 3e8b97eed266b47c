"""CSV cells a spreadsheet opens as text, never as a formula.

Provider strings (region codes, instance types, raw GPU names) reach every CSV this project
writes. A cell starting with `=`, `+`, `-` or `@` (or a tab or carriage return before one) is a
live formula in Excel, LibreOffice and Google Sheets: `=HYPERLINK("http://…")` in a region name
would become a link, `@SUM(…)` a calculation. OWASP's rule for CSV injection is applied to every
text cell: such a cell gets a leading single quote, which the spreadsheet shows as text. Numbers,
dates and NULLs are never changed, so a negative price stays a number.
"""

from __future__ import annotations

# The first characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object, text: str | None = None) -> str:
    """`value` as a CSV cell: `text` (its spelling; str(value) by default, "" for NULL), with a
    leading `'` when `value` is text that starts like a formula."""
    spelt = ("" if value is None else str(value)) if text is None else text
    if isinstance(value, str) and spelt.startswith(FORMULA_STARTS):
        return "'" + spelt
    return spelt
