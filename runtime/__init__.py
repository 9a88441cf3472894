"""What a switch and a host share to run: time, links and ports -- no P4, no experiment.

* :mod:`runtime.sched` -- the injected scheduler: ``VirtualScheduler`` (the ``sim`` binding) and
  ``RealtimeScheduler`` (the ``netns`` binding), integer nanoseconds;
* :mod:`runtime.link` -- the link model (bit rate, propagation delay), the transmitter that paces a
  port at it and the in-memory link between simulated nodes;
* :mod:`runtime.ports` -- the port protocol and AF_PACKET ports on real interfaces, with
  :mod:`runtime.offload` finishing the checksum and GSO offloads a host left to the device;
* :mod:`runtime.heap` -- settling the Python heap once a real-time process has built its state;
* :mod:`runtime.crc` -- the reflected CRC table builder (offload's CRC32c, p4switch's hashes).

``p4switch`` (the software switch) and ``topo``'s bindings (the simulator, the netns host process)
import it; it imports none of the project's other packages (docs/architecture.md).
"""
