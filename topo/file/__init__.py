"""The topology file: reading YAML node by node (``yaml_tree``), the format and its checks
(``schema``), its generators (``leafspine``: ``fabric:``; ``workload``: sized flows from a CDF), the
per-flow fairness it may ask for, a shipped file at other rates (``scaling``), the ``--set`` settings
grammar and the points and overrides that apply it to a file (``settings``, ``points``,
``overrides``), and ``hbh show``.

May import: topo.net, topo.analysis.
"""
