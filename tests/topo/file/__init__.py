"""Topology files as the loader reads them (topo/file/): the schema's resolution of defaults, overrides,
relative gains and buffer durations, its one-line refusals, ``hbh show``, the docs' examples and defaults
table, the fairness option, workloads, and the ``gcc:`` and ``cvihis:`` readings of a file.
"""
