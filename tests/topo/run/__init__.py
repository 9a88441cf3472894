"""What a run makes of itself (topo/run/): every printed metric computed as docs/reference/metrics.md
defines it, and the run-end invariants checked on whole runs (``hbh run --strict``).
"""
