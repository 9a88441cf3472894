"""Read and change the ALINEA parameters a switch holds, over P4Runtime (one write path).

The law parameters of an egress port live in that port's ``MyIngress.report_ingress`` entry
(action ``report_to_cpu``); a modelled ingress port's capacity and report interval in its
``MyIngress.port_config`` entry (action ``set_port``). A change is a read of the current entry,
a merge, :mod:`controlplane.params` validation of the *whole* result, then one MODIFY -- so an
invalid combination is refused before anything is written. The topology's timed events and
``hbh params set`` both come through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from controlplane.dataplane_config import LAW_KEY, LAW_TABLE, PORT_KEY, PORT_TABLE
from controlplane.p4runtime_client import dec, update
from controlplane.params import (
    LawParams,
    ParamError,
    PortParams,
    law_from_metadata,
    law_to_action,
    validate_port,
)

__all__ = ["LAW_TABLE", "PORT_TABLE", "PortState", "read_ports", "apply_law_changes", "apply_port_changes"]



@dataclass
class PortState:
    """What one switch port holds: its law (if it faces a reporting neighbour), its buffer model
    (if modelled), and the raw ``set_port`` parameters (MACs, node id) a MODIFY must keep."""

    port: int
    law: LawParams | None = None
    model: PortParams | None = None
    set_port: dict[str, int] | None = None


def _entries(client: Any, table: str) -> list[tuple[int, dict[str, int]]]:
    """(port, action parameters by name) of every entry of ``table``."""
    t = client.names.tables[table]
    actions = {a.preamble.id: {p.id: p.name for p in a.params} for a in client.names.p4info.actions}
    out = []
    for ent in client.read(pb.Entity(table_entry=pb.TableEntry(table_id=t.preamble.id))):
        te = ent.table_entry
        port = dec(te.match[0].exact.value)
        names = actions.get(te.action.action.action_id, {})
        out.append((port, {names[p.param_id]: dec(p.value) for p in te.action.action.params}))
    return out


def read_ports(client: Any) -> dict[int, PortState]:
    """Every port that has a law or a buffer model, by port number."""
    ports: dict[int, PortState] = {}
    for port, params in _entries(client, LAW_TABLE):
        st = ports.setdefault(port, PortState(port))
        try:
            st.law = law_from_metadata(params)
        except ParamError:
            st.law = None  # an entry this tool cannot read back (written by hand, invalid)
    for port, params in _entries(client, PORT_TABLE):
        st = ports.setdefault(port, PortState(port))
        st.model = PortParams(params["capacity_pkts"], params["report_interval_us"])
        st.set_port = params
    return ports


def _port_state(client: Any, port: int) -> PortState:
    return read_ports(client).get(port, PortState(port))


def merged_law(current: LawParams | None, port: int, changes: Mapping[str, float]) -> LawParams:
    if current is None:
        raise ParamError(f"port {port} has no {LAW_TABLE} entry: it faces no reporting ALINEA neighbour, "
                         "so it has no law parameters")
    return current.with_changes(**changes)


def merged_port(current: PortParams | None, port: int, changes: Mapping[str, int]) -> PortParams:
    if current is None:
        raise ParamError(f"port {port} has no {PORT_TABLE} entry: its buffer is not modelled, "
                         "so it has no capacity or report interval")
    return validate_port(replace(current, **changes))


def apply_law_changes(client: Any, port: int, changes: Mapping[str, float]) -> LawParams:
    """Change some law parameters of egress ``port``; returns what the switch now holds."""
    new = merged_law(_port_state(client, port).law, port, changes)
    te = client.names.table_entry(LAW_TABLE, {LAW_KEY: port}, "MyIngress.report_to_cpu", law_to_action(new))
    client.write(update(pb.Update.MODIFY, te))
    return new


def apply_port_changes(client: Any, port: int, changes: Mapping[str, int]) -> PortParams:
    """Change the capacity and/or report interval of modelled ingress ``port``."""
    st = _port_state(client, port)
    new = merged_port(st.model, port, changes)
    assert st.set_port is not None
    params = {**st.set_port, "capacity_pkts": new.capacity, "report_interval_us": new.interval_us}
    te = client.names.table_entry(PORT_TABLE, {PORT_KEY: port}, "MyIngress.set_port", params)
    client.write(update(pb.Update.MODIFY, te))
    return new
