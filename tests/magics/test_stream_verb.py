"""``%openmirror stream`` through IPython's real shell: it starts ``db.mirror_stream`` on a
streaming DataFrame of the namespace, lists the streams it started and stops them (the extension's
unload stops them too)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

import openmirror_nb as om
from tests.magics.test_commands import ip, ipython, om_line, state  # noqa: F401  (fixtures)
from tests.reliability.harness import mirrored_rows
from tests.streaming.feeds import COLUMNS, Feed, applied, event

pytestmark = pytest.mark.spark


def test_stream_starts_lists_and_stops(ip, spark, tmp_path):  # noqa: F811
    db = om_line(ip, f"connect {tmp_path / 'db'}")
    feed = Feed(tmp_path)
    events = [event(1, 0), event(2, 0)]
    feed.drop(events)
    ip.user_ns["DF"] = feed.stream(spark)
    done = om_line(ip, f"stream DF --table t --keys id --op-column op --checkpoint {tmp_path / 'c1'}")
    assert isinstance(done, om.MirrorStream)
    done.await_termination()  # available_now by default: it takes what arrived and ends
    om.LocalMirror(db.target.root).run_once()
    assert mirrored_rows(db, "t", COLUMNS) == applied(events)

    running = om_line(
        ip,
        f"stream DF --table u --keys id --op-column op --checkpoint {tmp_path / 'c2'} --trigger '1 second'",
    )
    assert running.query.isActive
    assert om_line(ip, "stream --list") == [done, running]
    assert om_line(ip, f"stream --stop {running.query.id}") == [running]
    assert not running.query.isActive
    with pytest.raises(UsageError, match="no stream 'nope' was started here"):
        om_line(ip, "stream --stop nope")
    with pytest.raises(UsageError, match="give DF and --table T"):
        om_line(ip, "stream DF")
    again = om_line(
        ip,
        f"stream DF --table u --keys id --op-column op --checkpoint {tmp_path / 'c2'} --trigger '1 second'",
    )
    ip.run_line_magic("unload_ext", "openmirror_nb")
    assert not again.query.isActive  # unloading the extension stops the streams it started
    ip.run_line_magic("load_ext", "openmirror_nb")  # the fixture unloads it again
    assert state(ip).streams == {}
