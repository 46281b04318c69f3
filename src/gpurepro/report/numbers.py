"""Numbers as the reports write them: one rule for every table and sentence of a report
(``fmt``: three significant digits, an exponent outside [1e-3, 1e5)), intervals and p-values in
that rule, exposure units (10^6), and one rule for a picture's columns (``picture_number``:
thousands grouped, no exponent below a million, since a figure's column has no room for
"1.23e+04" and reads 12,300 at a glance).
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def fmt_ci(ci: Sequence[float | None] | None, digits: int = 3) -> str:
    if not ci:
        return "–"
    lo, hi = ci
    return f"[{fmt(lo, digits)}, {fmt(hi, digits) if hi is not None else '∞'}]"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 1e-12" if p < 1e-12 else f"{p:.2g}"


def per_label(per: float) -> str:
    """1e6 -> '10^6' (as the reports write it); anything else as a number."""
    import math

    exponent = round(math.log10(per)) if per > 0 else None
    return f"10^{exponent}" if exponent is not None and 10 ** exponent == per else fmt(per)


def per_superscript(per: float) -> str:
    """1e6 -> '10⁶' for a picture's labels (its fonts have the superscript digits); anything
    else as per_label writes it."""
    text = per_label(per)
    if text.startswith("10^"):
        return "10" + text[3:].translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
    return text


def picture_number(x: float) -> str:
    """A rate in a picture's column: three significant digits, thousands grouped, no
    exponent below a million."""
    if x == 0:
        return "0"
    if 1000 <= abs(x) < 1e6:
        return f"{float(f'{x:.3g}'):,.0f}"
    return f"{x:.3g}"


def plain(x: float | None) -> str:
    """A number as the issue comment writes it, for a reader who is not a statistician: three
    significant digits, thousands grouped, never an exponent for a large number (1.31e+05 is
    131,000); a small one keeps ``fmt``'s form (an exponent below 1e-3)."""
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{float(f'{x:.3g}'):,.0f}"
    return fmt(x)


_EXPONENT = re.compile(r"(?<![\w.])(\d(?:\.\d+)?)e\+0*(\d{1,2})(?![\w.])")


def plain_text(text: str) -> str:
    """``text`` with every large number in exponent form (2.61e+05) written plainly
    (261,000): the verdict's sentences are written in the report's rule, the comment in this."""
    return _EXPONENT.sub(lambda m: plain(float(f"{m.group(1)}e{m.group(2)}")), text)
