"""Paths an envelope names: each one exists, or is null with the reason in `unavailable`.

Usage::

    named, unavailable = pointers.checked(paths.envelope_paths())
    # named["progress"] is None and unavailable["progress"] says why (no matplotlib, AUTOFL_PLOT_RENDERER=text, ...)
    # and where the text summary is, when progress.png was not drawn
"""

from __future__ import annotations

from pathlib import Path

NOT_WRITTEN = "not written yet"


def checked(named: dict[str, str]) -> tuple[dict[str, str | None], dict[str, str]]:
    """`named` with every path that is not an existing regular file replaced by None, and the reason for each."""
    kept: dict[str, str | None] = {}
    unavailable: dict[str, str] = {}
    for key, text in named.items():
        path = Path(text)
        if path.is_file():
            kept[key] = text
            continue
        kept[key] = None
        unavailable[key] = progress_reason(path) if key == "progress" else NOT_WRITTEN
    return kept, unavailable


def progress_reason(path: Path) -> str:
    """Why progress.png is not there, and where its text summary is when there is one."""
    from ..campaign import plot

    reason = plot.unavailable_reason() or "no picture drawn (matplotlib failed or the campaign has not plotted yet)"
    summary = path.with_suffix(".txt")
    return f"{reason}; text summary: {summary}" if summary.is_file() else reason
