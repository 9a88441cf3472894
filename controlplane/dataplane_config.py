"""What a controller writes so that p4src/alinea.p4 routes, models buffers and reports.

Everything the program needs from the control plane is a table entry or a clone session
(BMv2's P4Runtime server has no register writes); docs/reference/dataplane.md explains each. The
names here are the P4Info names, so a wrong one fails at once with the client's error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from p4.v1 import p4runtime_pb2 as pb

from controlplane.p4runtime_client import clone_session, multicast_group, update
from controlplane.params import LawParams, law_to_action

#: The clone session that carries port p's reports is REPORT_SESSION_BASE + p (alinea.p4).
REPORT_SESSION_BASE = 1000
#: With classes, every report session's port (alinea.p4's REPORT_RECIRC_PORT): a port with no link,
#: where egress builds the report and ``MyEgress.report_path`` recirculates it onto the top priority.
REPORT_RECIRC_PORT = 510
#: The match keys of the two per-port tables: ``report_ingress`` (a report's arrival port) and
#: ``port_config`` (the port whose buffer is modelled: an IPv4 arrival's, or a report poll's).
LAW_TABLE = "MyIngress.report_ingress"
LAW_KEY = "standard_metadata.ingress_port"
PORT_TABLE = "MyIngress.port_config"
PORT_KEY = "meta.model_port"
#: alinea.p4's action selector of equal-cost next hops.
ECMP_SELECTOR = "MyIngress.ecmp_selector"
ECMP_MEMBER_STRIDE = 64  # member ids of group g: 64 g, 64 g + 1, ... (a group holds at most max_group_size)


def route_update(client: Any, prefix: int, prefix_len: int, port: int, dst_mac: int, src_mac: int) -> pb.Update:
    """IPv4 route: ``prefix/prefix_len`` leaves through ``port`` with the given MACs."""
    return update(pb.Update.INSERT, client.names.table_entry(
        "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (prefix, prefix_len)}, "MyIngress.ipv4_forward",
        {"dst_mac": dst_mac, "src_mac": src_mac, "port": port}))


def ecmp_updates(client: Any, group_id: int, hops: Iterable[tuple[int, int, int]],
                 prefixes: Iterable[tuple[int, int]]) -> list[pb.Update]:
    """An equal-cost group: one ``ipv4_forward`` member per next hop (port, dst_mac, src_mac), the group
    of them, its ``ecmp_group`` entry and an ``ipv4_lpm`` entry sending each prefix to it. Member ids are
    ``group_id * ECMP_MEMBER_STRIDE + i`` so that groups never share (or collide on) a member."""
    hops = list(hops)
    largest = client.names.action_profiles[ECMP_SELECTOR].max_group_size
    if not 1 <= len(hops) <= largest:
        raise ValueError(f"ECMP group {group_id}: {len(hops)} next hops, the program holds 1..{largest}")
    members = [group_id * ECMP_MEMBER_STRIDE + i for i in range(len(hops))]
    out = [update(pb.Update.INSERT, client.names.profile_member(
        ECMP_SELECTOR, m, "MyIngress.ipv4_forward", {"dst_mac": dst, "src_mac": src, "port": port}))
        for m, (port, dst, src) in zip(members, hops)]
    out.append(update(pb.Update.INSERT, client.names.profile_group(ECMP_SELECTOR, group_id, members, largest)))
    out.append(update(pb.Update.INSERT, client.names.group_entry(
        "MyIngress.ecmp_group", {"meta.ecmp_group": group_id}, group_id)))
    out += [update(pb.Update.INSERT, client.names.table_entry(
        "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (prefix, plen)}, "MyIngress.set_ecmp_group",
        {"group_id": group_id})) for prefix, plen in prefixes]
    return out


def dst_class_update(client: Any, prefix: int, prefix_len: int, data_class: int) -> pb.Update:
    """Per-destination classes: packets to ``prefix/prefix_len`` are of ``data_class``, on egress
    priority queue ``data_class`` (``MyIngress.dst_class``; docs/howto/fabric.md)."""
    return update(pb.Update.INSERT, client.names.table_entry(
        "MyIngress.dst_class", {"hdr.ipv4.dstAddr": (prefix, prefix_len)}, "MyIngress.set_class",
        {"data_class": data_class}))


#: The copies alinea.p4's ``set_mcast`` holds (``port0..port3``).
MCAST_MAX_COPIES = 4
#: Ports below 2 ** MCAST_PORT_BITS have a ring of pending multicast packets (alinea.p4).
MCAST_PORT_LIMIT = 64
#: Places in each such ring (2 ** MCAST_RING_BITS): a port holds at most this many of a group's packets
#: (a packet whose place is still taken is refused), whatever its buffer (docs/howto/multicast.md).
MCAST_RING = 1024


def multicast_updates(client: Any, groups: Iterable[tuple[int, int, list[tuple[int, int, int]]]]) -> list[pb.Update]:
    """Multicast groups (docs/howto/multicast.md): per (address, group id, hops (port, dst_mac, src_mac)) its
    ``mcast_route`` entry, its PRE multicast group (one replica per hop port, instance 1), and one
    ``mcast_next_hop`` entry per port the groups leave by (the port's next-hop addresses)."""
    out: list[pb.Update] = []
    next_hops: dict[int, tuple[int, int]] = {}
    for address, group_id, hops in groups:
        if not 1 <= len(hops) <= MCAST_MAX_COPIES:
            raise ValueError(f"multicast group {group_id}: {len(hops)} copies, the program makes 1..{MCAST_MAX_COPIES}")
        ports = [port for port, _, _ in hops]
        padded = ports + [0] * (MCAST_MAX_COPIES - len(ports))
        out.append(update(pb.Update.INSERT, client.names.table_entry(
            "MyIngress.mcast_route", {"hdr.ipv4.dstAddr": address}, "MyIngress.set_mcast",
            {"group": group_id, "copies": len(ports), **{f"port{i}": p for i, p in enumerate(padded)}})))
        out.append(update(pb.Update.INSERT, multicast_group(group_id, [(port, 1) for port in ports])))
        next_hops.update({port: (dst, src) for port, dst, src in hops})
    out += [update(pb.Update.INSERT, client.names.table_entry(
        "MyEgress.mcast_next_hop", {"standard_metadata.egress_port": port}, "MyEgress.set_next_hop",
        {"dst_mac": dst, "src_mac": src})) for port, (dst, src) in sorted(next_hops.items())]
    return out


def add_route(client: Any, prefix: int, prefix_len: int, port: int, dst_mac: int, src_mac: int) -> None:
    client.write(route_update(client, prefix, prefix_len, port, dst_mac, src_mac))


def port_config_entry(client: Any, port: int, *, capacity_pkts: int, report_interval_us: int, node_id: int,
                      port_mac: int, upstream_mac: int) -> pb.TableEntry:
    return client.names.table_entry(
        PORT_TABLE, {PORT_KEY: port}, "MyIngress.set_port",
        {"capacity_pkts": capacity_pkts, "report_interval_us": report_interval_us, "node_id": node_id,
         "port_mac": port_mac, "upstream_mac": upstream_mac})


def model_port_updates(client: Any, port: int, *, recirculate: bool = False, **config: int) -> list[pb.Update]:
    """Model the buffer behind ``port`` and report its occupancy to the neighbour feeding it:
    its ``port_config`` entry and the clone session that carries its reports, out of ``port`` itself,
    or with ``recirculate`` (classes) to REPORT_RECIRC_PORT, whence ``report_path`` sends it on."""
    session_port = REPORT_RECIRC_PORT if recirculate else port
    return [update(pb.Update.INSERT, port_config_entry(client, port, **config)),
            update(pb.Update.INSERT, clone_session(REPORT_SESSION_BASE + port, [(session_port, 1)]))]


def report_path_update(client: Any, priority: int) -> pb.Update:
    """Classes: report clones reaching REPORT_RECIRC_PORT are recirculated and leave their port on
    egress ``priority``, the top one, so that no class's queue delays them (docs/howto/fabric.md)."""
    return update(pb.Update.INSERT, client.names.table_entry(
        "MyEgress.report_path", {"standard_metadata.egress_port": REPORT_RECIRC_PORT},
        "MyEgress.recirculate_report", {"priority": priority}))


def model_port(client: Any, port: int, **config: int) -> None:
    client.write(*model_port_updates(client, port, **config))


def accept_reports(client: Any, port: int, law: LawParams | None = None) -> None:
    """Reports arriving on ``port`` come from a downstream neighbour: hand them to the controller,
    with the parameters of the law that regulates this switch's rate out of ``port``."""
    client.insert(report_entry(client, port, law or LawParams()))


def report_entry(client: Any, port: int, law: LawParams) -> Any:
    """The ``report_ingress`` entry of ``port`` holding ``law`` (for INSERT or MODIFY)."""
    return client.names.table_entry(LAW_TABLE, {LAW_KEY: port},
                                    "MyIngress.report_to_cpu", law_to_action(law))


def ip_int(text: str) -> int:
    """Dotted quad to int, with an error naming the bad address."""
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise ValueError(f"not an IPv4 address: {text!r}")
    a, b, c, d = (int(p) for p in parts)
    return (a << 24) | (b << 16) | (c << 8) | d


def mac_int(text: str) -> int:
    """aa:bb:cc:dd:ee:ff to int, with an error naming the bad address."""
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"not a MAC address: {text!r}")
    try:
        return int("".join(parts), 16)
    except ValueError:
        raise ValueError(f"not a MAC address: {text!r}") from None


def mac_text(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))
