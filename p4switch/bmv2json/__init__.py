"""BMv2's JSON (what ``p4c-bm2-ss`` writes) as a p4switch program.

Why: a user who has p4c should run on p4switch the pipeline p4c compiled, taken the way
simple_switch takes it (the positional JSON, or the JSON's bytes as P4Runtime's
``p4_device_config``). :func:`compile_json` writes the JSON's objects as the P4_16 program
they say (``program.py``: why the front end's input is the join point) and runs the same
front end, pipeline compiler and engine VM on it as on a source file. Refusals name the
JSON path of the object (:class:`Bmv2JsonError`), never a traceback.
"""

from __future__ import annotations

import json
from typing import Any

from p4.config.v1 import p4info_pb2

from p4switch.compiled import CompiledProgram, compile_file, front_end

from .errors import Bmv2JsonError
from .program import translate

__all__ = ["Bmv2JsonError", "compile_json", "compile_program_file", "is_bmv2_json", "parse_json", "sibling_p4info", "translate", "JSON_CONFIG_NAME"]

JSON_CONFIG_NAME = "<bmv2 json>"


def is_bmv2_json(data: bytes) -> bool:
    """True when ``data`` looks like a JSON object (BMv2's config) rather than P4 text."""
    head = data.lstrip()[:1]
    return head == b"{"


def parse_json(data: bytes) -> Any:
    """The parsed JSON; one-line Bmv2JsonError when it is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Bmv2JsonError("", f"not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise Bmv2JsonError("", f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def compile_json(data: bytes, p4info: p4info_pb2.P4Info | None = None) -> CompiledProgram:
    """A ``p4switch.compiled.CompiledProgram`` from a BMv2 JSON's bytes.

    ``p4info`` (the controller's, when it pushed one) supplies what the JSON does not hold:
    which header is a controller header, counter units, action scopes, digest field names.
    Raises Bmv2JsonError (the JSON is refused) or P4Error (the written program does not check:
    a loader bug or a JSON p4c did not write).
    """
    from p4switch.frontend.preprocess import preprocess_text

    try:
        text = translate(parse_json(data), p4info)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise Bmv2JsonError("", f"malformed BMv2 JSON ({type(exc).__name__}: {exc})") from None
    from p4switch.frontend.errors import P4Error

    try:
        checked, built = front_end(preprocess_text(text, JSON_CONFIG_NAME))
    except P4Error as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise Bmv2JsonError("", f"the program written from this JSON does not check: {first}") from None
    return CompiledProgram(checked, built, data)


def compile_program_file(path: Any, include_dirs: Any = (), defines: Any = (),
                         p4info: p4info_pb2.P4Info | None = None) -> Any:
    """A program file by its content, as simple_switch takes its positional argument: a JSON
    object is p4c's BMv2 JSON (its P4Info, when given, read as for a pushed config), anything
    else P4_16 source for the front end."""
    from pathlib import Path

    p = Path(path)
    if p.is_file():
        with p.open("rb") as f:
            head = f.read(256)
        if is_bmv2_json(head):
            if p4info is None:
                p4info = sibling_p4info(p)
            try:
                return compile_json(p.read_bytes(), p4info)
            except Bmv2JsonError as exc:
                raise Bmv2JsonError(exc.path, f"{exc.message} (in {path})") from None
    return compile_file(path, include_dirs, defines)


def sibling_p4info(path: Any) -> p4info_pb2.P4Info | None:
    """``NAME.p4info.txtpb`` (or ``.txt``/``.bin``) beside ``NAME.json``, as ``make p4`` and p4c's
    ``--p4runtime-files`` leave them: it names the controller headers and counter units the
    JSON lacks. None when there is none; a file that does not parse is refused."""
    from pathlib import Path

    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    p = Path(path)
    stem = p.name[:-5] if p.name.endswith(".json") else p.stem
    for suffix in (".p4info.txtpb", ".p4info.txt", ".p4info.bin", ".p4info.pb"):
        cand = p.with_name(stem + suffix)
        if not cand.is_file():
            continue
        info = p4info_pb2.P4Info()
        try:
            if suffix in (".p4info.bin", ".p4info.pb"):
                info.ParseFromString(cand.read_bytes())
            else:
                text_format.Parse(cand.read_text(), info)
        except (text_format.ParseError, DecodeError, UnicodeDecodeError) as exc:
            raise Bmv2JsonError("", f"{cand}: not a P4Info ({str(exc).splitlines()[0] if str(exc) else exc})") from None
        return info
    return None
