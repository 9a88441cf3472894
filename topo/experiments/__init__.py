"""Experiments a user runs as ``hbh`` commands: ``hbh compare`` (``compare``, ``compare_report``),
``hbh fabric``, ``hbh hol``, ``hbh bmv2-diff``, the TCP validation tools (``tcp_validation``,
``tcp_trace``, ``tcp_diagnosis``) and ``hbh tfrc-reordering``.

May import: topo.net, topo.analysis, topo.file, topo.sim, topo.netns, topo.run, topo.sweep.
"""
