"""The dip of docs/results.md's "a dip that ends": R4-R5 slows and comes back to its own rate."""


from tests.paths import ROOT
from topo.file.schema import load_topology
from topo.results.dip import _with_dip


def test_a_dip_is_two_link_rate_events_that_restore_the_links_rate() -> None:
    base = load_topology(ROOT / "topo" / "capacity-drop.yaml")
    t = _with_dip(base, "bmv2", 8.4, 150, 500_000)
    assert t.options.queue_model == "bmv2"
    down, up = t.events
    assert (down.kind, down.link, down.rate_bps, down.at_ns) == ("link_rate", ("R4", "R5"), 500_000, 8_400_000_000)
    link = next(lk for lk in base.links if {lk.a, lk.b} == {"R4", "R5"})
    assert (up.link, up.rate_bps, up.at_ns - down.at_ns) == (("R4", "R5"), link.rate_bps, 150_000_000)
    assert base.events and base.events != t.events  # the file's own drop is replaced, the file untouched
