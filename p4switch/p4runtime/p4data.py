"""P4Data <-> Python values, driven by a P4Info ``P4DataTypeSpec``.

Digests and registers carry values of arbitrary P4 types. In Python they are:
ints for ``bit<W>``/``int<W>``/serializable enums, bools for ``bool``, tuples of
member values for structs and tuples, and for headers a tuple of field ints
(``None`` for an invalid header).
"""

from __future__ import annotations

from typing import Any

from p4.config.v1 import p4info_pb2, p4types_pb2
from p4.v1 import p4data_pb2

from p4switch.state.bytestrings import decode_signed, decode_unsigned, encode_signed, encode_unsigned
from p4switch.state.errors import Code, StateError, invalid


def _unsupported(what: str, kind: str | None) -> StateError:
    return StateError(Code.UNIMPLEMENTED, f"{what}: P4Data of type '{kind}' is not supported")


def encode_p4data(value: Any, spec: p4types_pb2.P4DataTypeSpec, types: p4info_pb2.P4Info | None,
                  what: str = "value") -> p4data_pb2.P4Data:
    """``types`` is the P4Info (its ``type_info`` resolves named types)."""
    kind = spec.WhichOneof("type_spec")
    out = p4data_pb2.P4Data()
    if kind == "bitstring":
        signed = spec.bitstring.WhichOneof("type_spec") == "int"
        out.bitstring = encode_signed(value) if signed else encode_unsigned(value)
    elif kind == "bool":
        out.bool = bool(value)
    elif kind == "serializable_enum":
        out.enum_value = encode_unsigned(value)
    elif kind in ("struct", "tuple"):
        members = _member_specs(spec, types, what)
        target = out.struct if kind == "struct" else out.tuple
        if len(value) != len(members):
            raise invalid(f"{what}: {len(members)} members expected, {len(value)} given")
        for (name, mspec), v in zip(members, value):
            target.members.append(encode_p4data(v, mspec, types, f"{what}.{name}"))
    elif kind == "header":
        out.header.is_valid = value is not None
        if value is not None:
            out.header.bitstrings.extend(encode_unsigned(v) for v in value)
    else:
        raise _unsupported(what, kind)
    return out


def decode_p4data(data: p4data_pb2.P4Data, spec: p4types_pb2.P4DataTypeSpec, types: p4info_pb2.P4Info | None,
                  what: str = "value") -> Any:
    kind = spec.WhichOneof("type_spec")
    got = data.WhichOneof("data")
    expected = {"serializable_enum": "enum_value"}.get(kind, kind)
    if got != expected:
        raise invalid(f"{what}: P4Data '{got}' given where '{kind}' is expected")
    if kind == "bitstring":
        bs = spec.bitstring
        sub = bs.WhichOneof("type_spec")
        if sub == "int":
            return decode_signed(data.bitstring, bs.int.bitwidth, what)
        if sub == "bit":
            return decode_unsigned(data.bitstring, bs.bit.bitwidth, what)
        raise _unsupported(what, sub)
    if kind == "bool":
        return data.bool
    if kind == "serializable_enum":
        return decode_unsigned(data.enum_value, 0, what)
    if kind in ("struct", "tuple"):
        members = _member_specs(spec, types, what)
        values = data.struct.members if kind == "struct" else data.tuple.members
        if len(values) != len(members):
            raise invalid(f"{what}: {len(members)} members expected, {len(values)} given")
        return tuple(decode_p4data(v, ms, types, f"{what}.{n}") for (n, ms), v in zip(members, values))
    raise _unsupported(what, kind)


def _member_specs(spec: p4types_pb2.P4DataTypeSpec, types: p4info_pb2.P4Info | None,
                  what: str) -> list[tuple[str, p4types_pb2.P4DataTypeSpec]]:
    if spec.WhichOneof("type_spec") == "tuple":
        return [(str(i), m) for i, m in enumerate(spec.tuple.members)]
    name = spec.struct.name
    if types is None or name not in types.type_info.structs:
        raise invalid(f"{what}: struct type '{name}' missing from the P4Info type_info")
    return [(m.name, m.type_spec) for m in types.type_info.structs[name].members]
