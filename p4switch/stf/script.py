"""Reading an STF ("simple test framework") file into commands.

Why a module of its own: p4c's STF files are the corpus every P4 target is tested on; their
syntax (one command a line, ``#`` comments, packet bytes as hex with spaces, ``*`` don't-care
nibbles and a ``$`` end mark in ``expect``) is read here once, into small records that carry
their ``file:line`` so that every failure later names the line that asked for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["StfCommand", "StfSyntaxError", "Number", "parse_stf", "parse_number", "parse_action_call"]


class StfSyntaxError(ValueError):
    """A line of an STF file that cannot be read; the message starts with ``file:line``."""


@dataclass(frozen=True)
class StfCommand:
    """One STF line: ``name`` (lower case) and its words; ``where`` is ``file:line``."""

    name: str
    args: tuple[str, ...]
    where: str
    text: str = ""


@dataclass(frozen=True)
class Number:
    """An STF number: its value, the mask of its cared-for bits (``*`` digits are don't care),
    and how many bits its digits spell (``None`` for decimal)."""

    value: int
    mask: int
    digit_bits: int | None = None
    wildcards: bool = False


_COMMANDS = {"add", "setdefault", "remove", "packet", "expect", "no_packet", "wait", "check_counter",
             "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get", "mc_mgrp_create",
             "mc_node_create", "mc_node_update", "mc_node_associate", "counter_read", "counter_write",
             "register_read", "register_write", "register_reset", "meter_get_rates", "meter_set_rates",
             "meter_array_set_rates"}
_DATA_COMMANDS = {"packet", "expect"}
_HEX_DATA = re.compile(r"^[0-9a-fA-F*]*\$?$")


def parse_stf(text: str, filename: str = "<stf>") -> list[StfCommand]:
    """The commands of an STF file, in order; raises StfSyntaxError naming file:line."""
    commands: list[StfCommand] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{filename}:{lineno}"
        word, _, rest = line.partition(" ")
        name = word.lower()
        if name not in _COMMANDS:
            raise StfSyntaxError(f"{where}: unknown STF command '{word}'")
        if name in _DATA_COMMANDS:
            commands.append(_data_command(name, rest, where, line))
        else:
            commands.append(StfCommand(name, tuple(rest.split()), where, line))
    return commands


def _data_command(name: str, rest: str, where: str, line: str) -> StfCommand:
    """``packet PORT BYTES`` / ``expect PORT [BYTES]``: the port and the bytes without spaces."""
    port, _, data = rest.strip().partition(" ")
    if not port.isdigit():
        raise StfSyntaxError(f"{where}: {name} needs a port number first, got '{port}'")
    data = "".join(data.split())
    if not _HEX_DATA.match(data) or (name == "packet" and ("*" in data or "$" in data)):
        raise StfSyntaxError(f"{where}: {name} data '{data}' is not hex digits"
                             + (" (with * and a final $)" if name == "expect" else ""))
    if name == "packet" and len(data) % 2:
        raise StfSyntaxError(f"{where}: packet data has an odd number of hex digits ({len(data)})")
    return StfCommand(name, (port, data), where, line)


def parse_number(text: str, where: str) -> Number:
    """``0x..``/``0b..``/``0o..`` (with ``*`` digits) or decimal -> Number."""
    t = text.strip().replace("_", "")
    base = {"0x": 16, "0b": 2, "0o": 8}.get(t[:2].lower())
    if base is None:
        if not t.isdigit():
            raise StfSyntaxError(f"{where}: '{text}' is not a number")
        return Number(int(t), -1)
    digits = t[2:]
    bits = {16: 4, 2: 1, 8: 3}[base]
    if not digits:
        raise StfSyntaxError(f"{where}: '{text}' has no digits")
    value = mask = 0
    full = (1 << bits) - 1
    try:
        for d in digits:
            value <<= bits
            mask <<= bits
            if d != "*":
                value |= int(d, base)
                mask |= full
    except ValueError:
        raise StfSyntaxError(f"{where}: '{text}' is not a number") from None
    return Number(value, mask, bits * len(digits), "*" in digits)


_ACTION = re.compile(r"^(?P<name>[A-Za-z_$][\w$.\[\]]*)\s*\((?P<args>[^()]*)\)\s*(?:=\s*(?P<id>\w+))?$")


def parse_action_call(text: str, where: str) -> tuple[str, list[tuple[str, Number]]]:
    """``name(arg:value, ...)`` -> (name, [(arg, Number)])."""
    m = _ACTION.match(text.strip())
    if m is None:
        raise StfSyntaxError(f"{where}: '{text.strip()}' is not an action call name(arg:value, ...)")
    args: list[tuple[str, Number]] = []
    for part in filter(None, (p.strip() for p in m.group("args").split(","))):
        arg, sep, value = part.partition(":")
        if not sep:
            raise StfSyntaxError(f"{where}: action argument '{part}' is not name:value")
        args.append((arg.strip(), parse_number(value, where)))
    return m.group("name"), args


@dataclass
class AddCommand:
    """``add TABLE [PRIORITY] FIELD:VALUE... ACTION(ARG:VALUE, ...) [= ID]`` taken apart."""

    table: str
    priority: int | None
    keys: list[tuple[str, str]] = field(default_factory=list)
    action: str = ""
    args: list[tuple[str, Number]] = field(default_factory=list)
    entry_id: str | None = None  # `= A`: check_counter NAME($A) reads this entry's direct counter


def split_add(cmd: StfCommand) -> AddCommand:
    """The parts of an ``add`` line (keys stay text: their meaning depends on the match kind)."""
    body = cmd.text.split(None, 1)[1] if len(cmd.text.split(None, 1)) > 1 else ""
    start = body.find("(")
    if start < 0:
        raise StfSyntaxError(f"{cmd.where}: add needs an action call name(...) at the end")
    head = body[:start]
    head = re.sub(r"\s*([:/])\s*", r"\1", head)
    words = head.split()
    if len(words) < 2:
        raise StfSyntaxError(f"{cmd.where}: add needs a table, the keys and an action")
    action_text = words.pop() + body[start:]
    table = words.pop(0)
    priority = None
    if words and words[0].isdigit():
        priority = int(words.pop(0))
    keys: list[tuple[str, str]] = []
    for w in words:
        k, sep, v = w.partition(":")
        if not sep or not k or not v:
            raise StfSyntaxError(f"{cmd.where}: key '{w}' is not field:value")
        keys.append((k, v))
    name, args = parse_action_call(action_text, cmd.where)
    m = _ACTION.match(action_text.strip())
    return AddCommand(table, priority, keys, name, args, m.group("id") if m else None)
