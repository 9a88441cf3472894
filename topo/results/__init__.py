"""The generators of docs sections (``hbh results``, ``hbh map``, ``hbh results-*``,
``hbh tcp-kernel``, ``hbh spine-balance``): each runs seeded experiments and writes its part of a
doc; ``doc`` assembles docs/results.md and ``splice`` puts sections in place.

May import: any other part of topo/ (the top of the package).
"""
