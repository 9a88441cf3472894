"""The simulator backend: a whole topology in virtual time in one process (``network``), its TCP
model and pgmcc flows (``tcp``, ``pgmcc``), the control latency it models, and the smallest form of
the binding (``hosts``: test hosts for one switch).

May import: topo.net.
"""
