"""The loop analysis: every ALINEA law of a topology checked before a run (``check``), the fluid
network and its controllers (``fluid_network``, ``fluid_control``), the floor check, the law values a
file leaves out derived from the loop (``derive``), and the cache of its warnings (``cache``).

May import: topo.net.
"""
