"""A netns host's frame relay between its tun device and its AF_PACKET uplink, in the engine.

Why: the relay's per-frame work (read the tun, the uplink's wire time and delay, the socket; TCP
frames from the socket into the tun) runs in a Rust thread that never takes the interpreter lock,
so the host's Python loop, which stalled for tens of milliseconds at times, no longer holds the
kernel's segments (docs/howto/netns.md, "Kernel TCP flows"). The class is the engine's
(engine/src/hosts/hostrelay.rs): ``HostRelay(tun_fd, sock_fd, vnet_hdr_len, eth_header, bitrate_bps,
delay_ns, t0_monotonic_ns, queue_frames)``; ``send(now_ns, frame, extra_ns=0, lost=False)``,
``backlog_ns(now_ns)``, ``set_bitrate``, ``notify_fd`` and ``take()`` for the frames Python must
see, ``stats()``, ``close()``. ``topo/netns/host.py`` binds it.
"""

from __future__ import annotations

import hbh_engine as _engine

__all__ = ["HostRelay", "TO_PYTHON_MAX"]

HostRelay = _engine.HostRelay
#: frames waiting for Python at most; more are dropped and counted (``to_python_dropped``)
TO_PYTHON_MAX: int = _engine.HOST_RELAY_TO_PYTHON_MAX
