"""The front end's checker (p4switch/frontend/check/): names and scopes, types, expressions, calls and
signatures, parsers, tables, loops and bounded constant evaluation, the programs p4c accepts and the ones it
rejects with a located error, and whole programs against the IR contract (checkutil.py places a snippet
after a common prelude).
"""
