"""Campaign time stamps: one format, written and read by `common/stamps` only."""

import re
from datetime import datetime, timezone
from pathlib import Path

from autofl_core.common import stamps

AUTOFL_SCRIPTS = Path(__file__).resolve().parents[2] / "skills" / "nvflare-autofl" / "scripts"


def test_a_stamp_reads_back_as_the_moment_it_names():
    moment = datetime(2026, 12, 6, 17, 45, 3, tzinfo=timezone.utc)
    assert stamps.text_of(moment) == "2026-12-06T17:45:03Z"
    assert stamps.parse("2026-12-06T17:45:03Z") == moment


def test_now_is_a_utc_stamp_within_a_second_of_the_clock():
    text = stamps.now_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text), text
    assert abs((stamps.parse(text) - datetime.now(timezone.utc)).total_seconds()) < 2


def test_what_is_not_a_campaign_stamp_reads_as_none():
    for text in (None, "", "2026-12-06 17:45:03", "2026-12-06T17:45:03+00:00", 17):
        assert stamps.parse(text) is None, text


def test_only_the_stamps_module_spells_the_format():
    spelled = [
        path.relative_to(AUTOFL_SCRIPTS)
        for path in AUTOFL_SCRIPTS.rglob("*.py")
        if "%Y-%m-%dT" in path.read_text(encoding="utf-8")
    ]
    assert [str(p) for p in spelled] == ["autofl_core/common/stamps.py"]
