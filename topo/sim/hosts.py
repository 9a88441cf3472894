"""Test hosts for a single switch on in-memory links (the sim binding's smallest form).

A :class:`SimHost` records every frame it receives; the experiment backend
(:mod:`topo.sim.network`) has the real hosts (senders, receivers, ALINEA reports).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch.switch import Switch
from runtime.link import InMemoryLink
from runtime.sched import VirtualScheduler


@dataclass
class SimHost:
    """A link endpoint that records (virtual ns, frame) of everything it receives."""

    name: str
    sched: VirtualScheduler
    got: list[tuple[int, bytes]] = field(default_factory=list)
    link: InMemoryLink | None = None

    def receive(self, frame: bytes) -> None:
        self.got.append((self.sched.now_ns(), frame))

    def send(self, frame: bytes) -> None:
        if self.link is None:
            raise RuntimeError(f"host {self.name} is not attached to a link")
        self.link.send(self, frame)

    def send_at(self, t_ns: int, frame: bytes) -> None:
        self.sched.call_at(t_ns, self.send, frame)

    def frames(self, ethertype: int | None = None) -> list[tuple[int, bytes]]:
        if ethertype is None:
            return list(self.got)
        return [(t, f) for t, f in self.got if len(f) >= 14 and int.from_bytes(f[12:14], "big") == ethertype]


def attach_host(switch: Switch, sched: VirtualScheduler, port: int, name: str, *, bitrate: int,
                delay_ns: int) -> SimHost:
    """A host on switch ``port`` over a full-duplex link of ``bitrate`` b/s and ``delay_ns``."""
    sw_port = switch.add_link_port(port, f"s-eth{port}")
    host = SimHost(name, sched)
    host.link = InMemoryLink(sched, host, sw_port, bitrate=bitrate, delay_ns=delay_ns)
    sw_port.attach(host.link)
    return host
