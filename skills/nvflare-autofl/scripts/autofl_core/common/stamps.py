"""UTC time stamps as the campaign writes and reads them (`2026-12-06T17:45:00Z`)."""

from __future__ import annotations

from datetime import datetime, timezone

STAMP = "%Y-%m-%dT%H:%M:%SZ"


def now_text() -> str:
    """The current UTC time as a campaign stamp."""
    return datetime.now(timezone.utc).strftime(STAMP)


def text_of(moment: datetime) -> str:
    return moment.strftime(STAMP)


def parse(stamp: object) -> datetime | None:
    """The UTC moment a stamp names; None when it is not a campaign stamp."""
    try:
        return datetime.strptime(str(stamp), STAMP).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
