"""The network model of a topology (topo/net/): the plan each switch installs, per-destination classes,
multicast trees, leaf-spine fabrics and their equal-cost routes, and the run-end invariants on hand-made
recordings.
"""
