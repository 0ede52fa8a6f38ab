"""History entries' times (`now_iso`, made with `time` rather than `datetime`): the form
`datetime.isoformat(timespec="milliseconds")` gives in UTC, and the time it is."""

from __future__ import annotations

import datetime
import re

from lsp_server.engine.history.entries import now_iso


def test_now_iso_is_datetimes_iso_form_in_utc() -> None:
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    stamp = now_iso()
    after = datetime.datetime.now(datetime.UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", stamp), stamp
    parsed = datetime.datetime.fromisoformat(stamp)
    assert parsed.utcoffset() == datetime.timedelta(0)
    assert before <= parsed <= after
    assert len(stamp) == len(after.isoformat(timespec="milliseconds"))
