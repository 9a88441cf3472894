"""Developer tools run by hand, not part of ``make bench``'s page: the engine crate's module graph
(``python -m tests.bench.tools.crate_graph``; tests/test_module_graph.py uses its circle finder),
behavioral-model's own test JSONs through p4switch's BMv2 JSON loader
(``tests.bench.tools.bmv2json_corpus``), and a BMv2-like p4switch behind link emulators where BMv2 is
absent (``tests.bench.tools.bmv2_like``).
"""
