"""``hbh run``: the runner that drives a backend (``runner``), and what a run writes at its end: the
summary (``summary``, ``summary_buffers``, ``summary_reaction``), the figures (``plots``) and the flow
completion times (``fct``).

May import: topo.net, topo.analysis, topo.file, topo.sim, topo.netns.
"""
