"""The loop analysis of a topology's laws before a run (topo/analysis/): its checks and warnings, its cache,
the laws-together fluid model (its cost, its overflow rule) and the path drain it builds on.
"""
