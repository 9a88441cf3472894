"""The netns backend (topo/netns/): its command lines, names and teardown, the link emulator, the live run's
state, keep-up verdicts and real-time priority, kernel TCP's ends and bursts, and (root) the shipped
experiments, classes, multicast, spines and fabrics run as real processes in network namespaces.
"""
