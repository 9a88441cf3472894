"""The front end's reading of P4 source (p4switch/frontend/lexer.py, parser.py, preprocess.py): cpp
preprocessing and its line mapping, every P4_16 construct v1model programs use, expressions and names,
syntax errors at their exact line and column, ``hbh p4 check``'s output, and the parse time of alinea.p4.
"""
