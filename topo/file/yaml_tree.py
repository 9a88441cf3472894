"""Reading a YAML document node by node, so every complaint can name its file and line.

Why not ``yaml.safe_load``: it returns plain dicts and lists that have forgotten where each
value came from, and it silently keeps the last of two duplicate keys. The topology loader
instead composes the node tree (every node keeps its ``start_mark``) and walks it with the
helpers here, which check types, keys and duplicates and raise :class:`TopologyError` with
``FILE:LINE: PATH: what is wrong`` -- one line, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from controlplane.units import UnitError

__all__ = ["TopologyError", "Doc", "Entry", "compose"]

T = TypeVar("T")


class TopologyError(Exception):
    """A topology file is wrong; the message is one line: ``FILE:LINE: PATH: what is wrong``."""


@dataclass(frozen=True)
class Entry:
    """One ``key: value`` of a mapping, with both nodes (the key's line is where a key error points)."""

    key: str
    key_node: Node
    value: Node


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return f"{node.value!r}" if node.value != "" else "nothing (null)"


def compose(text: str, source: str) -> Node:
    """The document's root node; YAML syntax errors become a TopologyError with the line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = ", ".join(p for p in (exc.context, exc.problem) if p)
        raise TopologyError(f"{source}:{line}: YAML syntax error: {_one_line(what)}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"{source}:1: YAML error: {_one_line(str(exc))}") from None
    if root is None:
        raise TopologyError(f"{source}:1: the file is empty (expected a mapping with nodes and links)")
    return root


class Doc:
    """The walker: type checks and value conversions that know the file name."""

    def __init__(self, source: str, labels: dict[int, str] | None = None) -> None:
        """``labels``: lines past the end of the text that name where a node added to the tree
        came from (``hbh sweep``'s ``--set``); errors there say that name instead of FILE:LINE."""
        self.source = source
        self.labels = labels or {}
        self._constructor = yaml.constructor.SafeConstructor()

    # ---- errors ----------------------------------------------------------------------------------
    def where(self, line: int) -> str:
        return self.labels.get(line) or f"{self.source}:{line}"

    def error(self, node: Node, path: str, what: str) -> TopologyError:
        return TopologyError(f"{self.where(node.start_mark.line + 1)}: {path}: {_one_line(what)}")

    def error_at_line(self, line: int, path: str, what: str) -> TopologyError:
        return TopologyError(f"{self.where(line)}: {path}: {_one_line(what)}")

    @staticmethod
    def line(node: Node) -> int:
        return node.start_mark.line + 1

    # ---- containers ------------------------------------------------------------------------------
    def mapping(self, node: Node, path: str, allowed: Iterable[str] | None = None,
                required: Iterable[str] = ()) -> dict[str, Entry]:
        """The entries of a mapping in file order; unknown, duplicate or missing keys are errors.

        ``allowed`` None: any key (the caller checks names, e.g. node names).
        """
        if not isinstance(node, MappingNode):
            raise self.error(node, path or "(top level)", f"expected a mapping, got {_kind(node)}")
        allowed_list = list(allowed) if allowed is not None else None
        entries: dict[str, Entry] = {}
        for key_node, value in node.value:
            if not isinstance(key_node, ScalarNode):
                raise self.error(key_node, path, f"a key must be a plain name, got {_kind(key_node)}")
            key = key_node.value
            where = f"{path}.{key}" if path else key
            if key in entries:
                first = self.line(entries[key].key_node)
                raise self.error(key_node, where, f"duplicate key {key!r} (first at line {first})")
            if allowed_list is not None and key not in allowed_list:
                raise self.error(key_node, where, f"unknown key {key!r} (allowed: {', '.join(allowed_list)})")
            entries[key] = Entry(key, key_node, value)
        missing = [k for k in required if k not in entries]
        if missing:
            raise self.error(node, path or "(top level)", f"missing required key {missing[0]!r}")
        return entries

    def sequence(self, node: Node, path: str) -> list[Node]:
        if not isinstance(node, SequenceNode):
            raise self.error(node, path, f"expected a list, got {_kind(node)}")
        return list(node.value)

    # ---- scalars ---------------------------------------------------------------------------------
    def scalar(self, node: Node, path: str) -> Any:
        """The Python value of a scalar (YAML's own typing: ints, floats, bools, strings, null)."""
        if not isinstance(node, ScalarNode):
            raise self.error(node, path, f"expected a single value, got {_kind(node)}")
        return self._constructor.construct_object(node, deep=True)

    def text(self, node: Node, path: str) -> str:
        """A name or free text, as written (so ``on`` stays the text 'on', not True)."""
        if not isinstance(node, ScalarNode):
            raise self.error(node, path, f"expected a name, got {_kind(node)}")
        if node.value == "" and node.style is None:
            raise self.error(node, path, "expected a name, got nothing")
        return node.value

    def integer(self, node: Node, path: str, what: str) -> int:
        value = self.scalar(node, path)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(node, path, f"expected a whole number of {what}, got {value!r}")
        return value

    def unit(self, node: Node, path: str, parse: Callable[[object, str], T]) -> T:
        """A quantity read by one of ``controlplane.units``' parsers; its UnitError gets the line."""
        value = self.scalar(node, path)
        try:
            return parse(value, path)
        except UnitError as exc:
            raise TopologyError(f"{self.where(self.line(node))}: {_one_line(str(exc))}") from None
        except (OverflowError, ValueError):  # 1e400, .inf or .nan where a whole number is needed
            raise self.error(node, path, f"{value!r} is not a usable number") from None
