"""Fully qualified names of controllable objects, as p4c builds them for P4Info.

Rules (the ones P4Runtime clients see as ``preamble.name``):

* An object declared at top level (a global action such as ``NoAction``, a top-level
  extern instance such as ``register<bit<32>>(512) occupancy;``) is named by its own
  name, unqualified: ``NoAction``, ``occupancy``.
* An object declared inside a control or parser (a table, an action, an extern
  instance, a value set) is named ``<block>.<name>``, where ``<block>`` is the name of
  the control/parser *declaration* when that block is bound directly in the package
  instantiation (``V1Switch(..., MyIngress(), ...)`` gives ``MyIngress.ipv4_lpm``), and
  the enclosing block's prefix followed by the *instance* name for a sub-control or
  sub-parser instantiated inside another block (``MySub() sub;`` in ``MyIngress``
  gives ``MyIngress.sub.t``).
* ``@name("x")`` replaces the object's own name and stays relative to the enclosing
  block (``MyIngress.x``); ``@name(".x")`` is absolute: the name is ``x`` with the dot
  removed, whatever the enclosing block. A top-level ``@name("x")`` gives ``x``.
* A global action keeps its global name wherever a control uses it (p4c copies it into
  the control but gives the copy ``@name(".NoAction")``).
"""

from __future__ import annotations

from p4switch.frontend import ast


def name_annotation(decl: ast.Declaration) -> str | None:
    """The string of ``@name("...")`` on ``decl``, if any."""
    ann = ast.find_annotation(decl.annotations, "name")
    return ann.string_arg() if ann is not None else None


def qualify(prefix: str | None, decl: ast.Declaration) -> str:
    """The fully qualified name of ``decl`` declared in a block named ``prefix``
    (None at top level), honouring ``@name``."""
    given = name_annotation(decl)
    if given is not None and given.startswith("."):
        return given[1:]
    own = given if given is not None else decl.name
    return f"{prefix}.{own}" if prefix else own


def local_name(decl: ast.Declaration) -> str:
    """The name of ``decl`` as used inside its block (the ``@name`` if relative)."""
    given = name_annotation(decl)
    if given is None:
        return decl.name
    return given[1:] if given.startswith(".") else given
