"""P4Info as the front end writes it (p4switch/frontend/p4info.py): ids, aliases and names as p4c gives them,
the rewrites p4c makes before writing it, real programs' P4Info, and the written file loaded by
p4runtime-shell.
"""
