"""Parameter sweeps and many-seed runs (``hbh sweep``, docs/howto/sweeps.md).

* :mod:`topo.file.settings` -- ``--set``, ``--controls``, ``--seeds``;
* :mod:`topo.file.points` -- the grid, and the one function turning a point into a topology;
* :mod:`topo.sweep.task` -- one run (a Ray task or a plain call) and its stable key;
* :mod:`topo.sweep.execute` -- serial or Ray (local or a cluster);
* :mod:`topo.sweep.store` -- one result file per run, atomic (resume);
* :mod:`topo.sweep.report`, :mod:`topo.sweep.stats` -- runs.csv, sweep.md, figures;
* :mod:`topo.sweep.run` -- ``plan_sweep`` and ``run_sweep``, the library entry points.
"""
