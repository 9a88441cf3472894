"""Runs in the simulator (topo/sim/): the closed ALINEA loop on the shipped topologies, control latency, a
host's receive path and paced sender, bits-not-packets runs, and the end-to-end controls (CVIHIS, pgmcc,
TFRC, LEDBAT, TCP's model) on short runs.
"""
