"""The experiments behind the CLI's comparisons (topo/experiments/): ``hbh compare`` (with gcc and
CVIHIS's published behaviour), head-of-line blocking, the kernel TCP traces' diagnosis and the TCP model's
validation, and tests/topo/cvihis_cycles.py's trace of one CVIHIS cell.
"""
