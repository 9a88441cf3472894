"""A port's queue holds the reports the switch will send out of it, not one per report interval whatever
arrives (issue 46; controlplane/agent.py, ReportRate): BMv2 counts a queue's rate in packets of any size, so
report slots no report takes go to the data, above the rate the law set."""

from __future__ import annotations

from tests.paths import RANDOM_CASES
from tests.topo.randomcheck import case_seconds, judge

CASES = RANDOM_CASES


def test_a_law_at_its_floor_holds_the_data_where_no_report_goes_back() -> None:
    """f0 hashes to S3 -> S4, whose exit is 0.5 Mb/s; nothing comes back from S4 to S3 (f9 hashes to S2), so
    S3 sends no report toward S4. S3's law cuts to its floor when S4's buffer fills; with the 100 report
    slots of a 10 ms interval held in the queue S3 still sent f0 at its 1 Mb/s and S4's buffer overflowed
    for the whole run. Held to the reports that go (none), the cut holds: nothing is lost."""
    text = (CASES / "ecmp-idle-return-reserve.yaml").read_text()
    seconds = case_seconds(text)
    verdict = judge(text, seconds, all_alinea=True, source="ecmp-idle-return-reserve.yaml")
    assert verdict.problems == []
    assert verdict.lost == 0
