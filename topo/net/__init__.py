"""The network as the backends see it: the resolved topology (``model``), each switch's plan
(``plan``), the paths the flows take, ECMP included (``routes``), what a run records (``record``), the
invariants every run must keep (``invariants``), the multicast view (``multicast``) and the one
percentile every metric quotes (``stats``).

May import: no other part of topo/ (below every other subpackage); controlplane, hosts, p4switch,
runtime.
"""
