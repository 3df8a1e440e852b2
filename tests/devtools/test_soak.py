"""The soak in short: real qcluster workers, users writing, a worker killed
with SIGKILL, model faults; nothing lost, duplicated or left stuck."""

import io

import pytest

from devtools.soak import Soak, SoakConfig


@pytest.mark.slow
def test_short_soak_keeps_every_invariant(transactional_db, tmp_path):
    # Small and quick: three channels, two workers and two users, a model fault in four calls, 45 seconds.
    load = {"channels": 3, "workers": 2, "users": 2, "fault_rate": 0.25, "minutes": 0.75, "seed": 11}
    # A 30 s lease: task timeout 20 s, broker retry 25 s, model calls 2 s (SoakConfig).
    timing = {"kill_every": 12.0, "scan_every": 2.0, "lease": 30, "drain_seconds": 40}
    config = SoakConfig(**load, **timing, log_dir=tmp_path)
    out = io.StringIO()
    report = Soak(config, stdout=out).run()
    text = "\n".join(report.lines())
    assert report.ok, text
    faults = ("duplicates", "messages_lost", "messages_altered", "leases_stuck", "pressure_wrong")
    assert {fault: getattr(report, fault) for fault in faults} == dict.fromkeys(faults, 0), text
    assert report.kills >= 1 and report.restarts == report.kills, text
    assert report.summaries_written >= 1 and report.channels_compacted >= 1, text
    assert report.messages_appended >= 24, text
    assert not report.problems, text
