"""The netns backend: a topology as real processes on veth links in real time (``network``), the
host process (``host``), the switch processes (``switches``), namespaces and veths (``plumbing``),
kernel TCP flows and where they run (``tcpflow``, ``tcp_ends``, ``pace``), BMv2's link emulation and
pacing (``linkemu``, ``link_pacing``), whether a run kept real time (``keepup``), running experiments
as a live network (``live``), and the traces of a netns TCP run (``loop_trace``, ``tcp_bursts``).

May import: topo.net, topo.sim (the constants and host cores both backends share).
"""
