"""The pieces of docs/results.md and docs/map.md (topo/results/): each section's generator on short runs,
the splice of regenerated sections, the map's cells and figure, what moved, spine balance, and the TCP
sections (``hbh results --only tcp``, ``hbh tcp-kernel``).
"""
