"""Random topologies judged (tests/topo/randomcheck.py, drawn by tests/topo/topogen.py): the property
tests, ``make fuzz-topo``'s forked judge, and the cases kept in tests/topo/random_cases/ and
tests/topo/user_cases/ (found through tests/paths.py), each of which once lost packets unwarned until the
analysis or the law learned what it had left out.
"""
