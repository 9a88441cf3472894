"""`hbh params set|show`: the ALINEA parameters of a running switch, over P4Runtime.

``set`` checks every value it was given before it connects (a fraction outside (0, 1], a rate
<= 0, O_min above O_max, W_min above W_max, a port out of range or, with ``--run``, a port the
switch does not have; a run that has ended: one line naming the parameter and the value, exit 2); after connecting it reads what the port holds, merges, validates the
whole set again (e.g. a new O_min against the switch's O_max) and only then writes one MODIFY.
A port the switch has no entry for is refused the same way, before anything is written.

To write, the tool becomes the primary controller for a moment (election id
``PARAMS_ELECTION_ID``, above any agent's, or one above the highest id the switch has seen when
an agent took the role back after an earlier write); the agent takes the primary role back when
the tool disconnects (netns runs: one above, see :mod:`topo.netns.network`), and applies the change at
the next report it receives.

A switch is named by its P4Runtime address, or -- when the command is registered with a
``locate`` function (``topo.netns.live`` does: a netns run's directory and the switch's topology name)
-- by ``--run DIR --switch NAME``; this module knows nothing of experiments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from controlplane.params import PPM, LawParams, ParamError, PortParams, validate_port
from controlplane.units import (
    OfCapacity,
    UnitError,
    format_duration,
    format_rate,
    parse_duration_ns,
    parse_fraction,
    parse_rate,
    parse_rate_or_share,
    resolve_rate,
)

__all__ = ["register", "Locate", "Describe", "PARAMS_ELECTION_ID", "parse_changes", "format_origins"]

PARAMS_ELECTION_ID = (1, 0)
MAX_PORT = 510  # 511 is BMv2's drop port

# option -> (LawParams/PortParams field, parser)
_LAW_OPTIONS = {"o_min": parse_fraction, "o_max": parse_fraction, "w_max": parse_rate_or_share,
                "w_min": parse_rate_or_share, "k_p": parse_rate_or_share, "r_max": parse_rate_or_share,
                "r_floor": parse_rate_or_share}
_ORIGIN_FIELDS = ("o_min", "o_max", "w_max", "w_min", "k_p", "r_max", "r_floor")

# (run directory, switch name) -> (P4Runtime address, device id); ParamError if there is no such switch
Locate = Callable[[str, str], tuple[str, int]]
# (run directory, switch name) -> {port: what the run's topology resolved for it}: "link_rate_bps",
# "toward", "law" {field: value}, "origins" {field: file|derived|default} (topo.netns.live.port_records)
Describe = Callable[[str, str], dict[int, dict[str, Any]]]


def register(sub: argparse._SubParsersAction, locate: Locate | None = None, describe: Describe | None = None) -> None:
    """``hbh params``; with ``locate``, a switch can also be named by ``--run DIR --switch NAME``, and
    with ``describe`` the run's topology gives link rates (for ``0.25C``) and where values came from."""
    p = sub.add_parser("params", help="show or change the ALINEA parameters a running switch holds",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ps = p.add_subparsers(dest="params_command", metavar="{set,show}")
    ps.required = True
    for name, helptext in (("set", "change parameters of one port"), ("show", "list every port's parameters")):
        q = ps.add_parser(name, help=helptext)
        where = q.add_mutually_exclusive_group(required=True)
        where.add_argument("--grpc-addr", help="the switch's P4Runtime address, HOST:PORT")
        if locate is not None:
            where.add_argument("--run", metavar="DIR", help="a running netns experiment's directory (with --switch)")
            q.add_argument("--switch", help="with --run: the switch's name in the topology, e.g. R1")
        q.add_argument("--device-id", type=int, default=None, help="P4Runtime device id (default 0; with --run "
                                                                   "the switch's own)")
        q.set_defaults(func=_set if name == "set" else _show, locate=locate, describe=describe, run=None,
                       switch=None)
        if name == "set":
            q.add_argument("--port", required=True, help="switch port: the egress port toward the reporting "
                                                         "neighbour (law) and/or the modelled ingress port")
            q.add_argument("--o-min", help="O_min, fraction of the downstream buffer (e.g. 15%% or 0.15)")
            q.add_argument("--o-max", help="O_max, the target occupancy (e.g. 70%%)")
            q.add_argument("--w-max", help="W_max, rate per unit of occupancy error (e.g. 8Mbps, or 4C: four "
                                           "times the link's capacity)")
            q.add_argument("--w-min", help="W_min (e.g. 500kbps or 0.25C)")
            q.add_argument("--k-p", help="PI damping gain, rate per unit of occupancy change (0: the paper's law; "
                                         "e.g. 12C)")
            q.add_argument("--r-max", help="R_max, e.g. 1.8Mbps or 0.9C")
            q.add_argument("--r-floor", help="rate floor, e.g. 40kbps or 0.02C")
            q.add_argument("--link-rate", help="the rate of the port's link, for values written as a multiple of "
                                               "it (C); with --run, the topology's")
            q.add_argument("--capacity", help="buffer capacity of the modelled ingress port, packets")
            q.add_argument("--interval", help="report interval of the modelled ingress port, e.g. 10ms")


def parse_changes(args: argparse.Namespace) -> tuple[int, dict[str, float], dict[str, int]]:
    """(port, law changes, port changes) from the options; ParamError/UnitError if any is invalid."""
    port = _port(args.port)
    _check_port_of_run(args, port)
    law: dict[str, float] = {}
    capacity = _link_rate(args, port)
    for name, parse in _LAW_OPTIONS.items():
        text = getattr(args, name)
        if text is not None:
            option = f"--{name.replace('_', '-')}"
            value = parse(text, option)
            if isinstance(value, OfCapacity) and capacity is None:
                raise UnitError(f"{option} = {value}: a multiple of the link's capacity needs the link's rate "
                                "(--link-rate RATE, or --run DIR --switch NAME)")
            law[name] = resolve_rate(value, capacity, option)
    model: dict[str, int] = {}
    if args.capacity is not None:
        try:
            model["capacity"] = int(args.capacity)
        except ValueError:
            raise ParamError(f"--capacity = {args.capacity!r}: must be a whole number of packets >= 1") from None
    if args.interval is not None:
        ns = parse_duration_ns(args.interval, "--interval")
        if ns < 0 or ns % 1000:
            raise ParamError(f"--interval = {args.interval!r}: must be >= 0 and a whole number of µs")
        model["interval_us"] = ns // 1000
    if not law and not model:
        raise ParamError("nothing to set: give at least one of --o-min --o-max --w-max --w-min --k-p --r-max "
                         "--r-floor --capacity --interval")
    _check_alone(law, model)
    return port, law, model


def _link_rate(args: argparse.Namespace, port: int) -> float | None:
    """The rate of ``port``'s link: ``--link-rate``, else the run's topology, else unknown."""
    if getattr(args, "link_rate", None) is not None:
        rate = parse_rate(args.link_rate, "--link-rate")
        if not rate > 0:
            raise ParamError(f"--link-rate = {args.link_rate!r}: must be > 0")
        return rate
    record = _records(args).get(port)
    return None if record is None else float(record["link_rate_bps"])


def _records(args: argparse.Namespace) -> dict[int, dict[str, Any]]:
    if args.run is None or getattr(args, "describe", None) is None:
        return {}
    return args.describe(args.run, args.switch)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ParamError(f"--port = {text!r}: not a port number") from None
    if not 0 <= port <= MAX_PORT:
        raise ParamError(f"--port = {port}: a switch port is 0..{MAX_PORT}")
    return port


def _check_port_of_run(args: argparse.Namespace, port: int) -> None:
    """With ``--run``, the run's topology lists the switch's ports: refuse another before connecting."""
    records = _records(args)
    if records and port not in records:
        known = ", ".join(f"{p} (toward {r.get('toward', '?')})" for p, r in sorted(records.items()))
        raise ParamError(f"--port = {port}: switch {args.switch} of run {args.run} has no such port (its ports: "
                         f"{known})")


def _check_alone(law: dict[str, float], model: dict[str, int]) -> None:
    """Each value on its own, and pairs given together, before any connection is made."""
    for name in ("o_min", "o_max"):
        if name in law and not 0 < law[name] <= 1:
            raise ParamError(f"--{name.replace('_', '-')} = {law[name]:g}: a fraction must be in (0, 1]")
    for name in ("w_max", "w_min", "r_max", "r_floor"):
        if name in law and not law[name] > 0:
            raise ParamError(f"--{name.replace('_', '-')} = {law[name]:g}: must be > 0")
    if "k_p" in law and law["k_p"] < 0:
        raise ParamError(f"--k-p = {law['k_p']:g}: must be >= 0")
    for low, high in (("o_min", "o_max"), ("w_min", "w_max"), ("r_floor", "r_max")):
        if low in law and high in law and law[low] > law[high]:
            raise ParamError(f"--{low.replace('_', '-')} = {law[low]:g} is above --{high.replace('_', '-')} = "
                             f"{law[high]:g}")
    if model:
        validate_port(PortParams(model.get("capacity", 1), model.get("interval_us", 0)))


def resolve_target(args: argparse.Namespace) -> None:
    """Fill ``grpc_addr``/``device_id`` from ``--run DIR --switch NAME`` (through ``args.locate``)."""
    if args.run is None:
        if args.switch is not None:
            raise ParamError("--switch is only used with --run DIR")
        args.device_id = 0 if args.device_id is None else args.device_id
        return
    if args.switch is None:
        raise ParamError("--run needs --switch NAME (the switch's name in the topology)")
    grpc_addr, device_id = args.locate(args.run, args.switch)
    args.grpc_addr = grpc_addr
    if args.device_id is None:
        args.device_id = device_id


def _connect(args: argparse.Namespace, write: bool) -> Any:
    from controlplane.p4runtime_client import GrpcController

    ctl = GrpcController(args.grpc_addr, args.device_id, election=PARAMS_ELECTION_ID, timeout=5.0, stream=write)
    try:
        if write:
            ctl.claim_primary()  # above an agent that took the role back after an earlier write
        ctl.fetch_p4info()
    except BaseException:
        ctl.close()
        raise
    return ctl


def _set(args: argparse.Namespace) -> int:
    try:
        resolve_target(args)
        port, law, model = parse_changes(args)
    except (ParamError, UnitError) as exc:
        print(f"hbh params set: {exc}", file=sys.stderr)
        return 2
    from controlplane import params_io

    try:
        ctl = _connect(args, write=True)
    except Exception as exc:  # noqa: BLE001 - ClientError, grpc.RpcError: one line, not a traceback
        print(f"hbh params set: {args.grpc_addr}: {_rpc_message(exc)}", file=sys.stderr)
        return 1
    try:
        state = params_io.read_ports(ctl).get(port, params_io.PortState(port))
        new_law = params_io.merged_law(state.law, port, law) if law else None
        new_model = params_io.merged_port(state.model, port, model) if model else None
        if new_law is not None:
            params_io.apply_law_changes(ctl, port, law)
        if new_model is not None:
            params_io.apply_port_changes(ctl, port, model)
    except ParamError as exc:
        print(f"hbh params set: {exc} (nothing written)", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001
        print(f"hbh params set: {args.grpc_addr}: {_rpc_message(exc)}", file=sys.stderr)
        return 1
    finally:
        ctl.close()
    print(f"port {port}: " + ", ".join(_describe(new_law, new_model)))
    return 0


def _show(args: argparse.Namespace) -> int:
    from controlplane import params_io

    try:
        resolve_target(args)
    except ParamError as exc:
        print(f"hbh params show: {exc}", file=sys.stderr)
        return 2
    try:
        ctl = _connect(args, write=False)
        ports = params_io.read_ports(ctl)
        ctl.close()
    except Exception as exc:  # noqa: BLE001
        print(f"hbh params show: {args.grpc_addr}: {_rpc_message(exc)}", file=sys.stderr)
        return 1
    print(format_ports(ports))
    try:
        records = _records(args)
    except ParamError as exc:
        print(f"hbh params show: {exc}", file=sys.stderr)
        return 2
    if records:
        print(format_origins(ports, records))
    return 0


def format_origins(ports: dict[int, Any], records: dict[int, dict[str, Any]]) -> str:
    """Where each value a port holds came from: the run's topology file, derived by the loader
    (docs/background/analysis.md, "Derived parameters"), the built-in default, or ``live`` (changed since the
    run started, e.g. by ``hbh params set``)."""
    lines = ["where the values came from (file, derived, default; live = changed during the run):"]
    for port, st in sorted(ports.items()):
        record = records.get(port)
        if record is None or st.law is None or "law" not in record:
            continue
        cells = [f"{name} {_origin(name, getattr(st.law, name), record['law'][name], record['origins'][name])}"
                 for name in _ORIGIN_FIELDS]
        lines.append(f"{port:>4} (toward {record['toward']}, link {format_rate(record['link_rate_bps'])}): "
                     + ", ".join(cells))
    return "\n".join(lines)


def _origin(name: str, held: float, resolved: float, origin: str) -> str:
    """``origin``, unless the switch holds another value than the run resolved (compared in the
    switch's own units: parts per million, whole b/s)."""
    scale = PPM if name in ("o_min", "o_max") else 1
    return origin if round(held * scale) == round(resolved * scale) else "live"


def format_ports(ports: dict[int, Any]) -> str:
    head = f"{'port':>4}  {'O_min':>6} {'O_max':>6} {'W_max':>9} {'W_min':>9} {'k_p':>9} {'R_max':>9} {'floor':>9}" \
           f"  {'capacity':>8} {'interval':>8}"
    lines = [head]
    for port, st in sorted(ports.items()):
        law = st.law
        cells = (["-"] * 7 if law is None else
                 [f"{100 * law.o_min:.1f}%", f"{100 * law.o_max:.1f}%", format_rate(law.w_max), format_rate(law.w_min),
                  format_rate(law.k_p), format_rate(law.r_max), format_rate(law.r_floor)])
        model = st.model
        mcells = ["-", "-"] if model is None else [str(model.capacity), format_duration(model.interval_us * 1000)]
        lines.append(f"{port:>4}  {cells[0]:>6} {cells[1]:>6} {cells[2]:>9} {cells[3]:>9} {cells[4]:>9} "
                     f"{cells[5]:>9} {cells[6]:>9}  {mcells[0]:>8} {mcells[1]:>8}")
    return "\n".join(lines)


def _describe(law: LawParams | None, model: PortParams | None) -> list[str]:
    out = []
    if law is not None:
        out.append(f"O_min {100 * law.o_min:g}% O_max {100 * law.o_max:g}% W_max {format_rate(law.w_max)} "
                   f"W_min {format_rate(law.w_min)} k_p {format_rate(law.k_p)} R_max {format_rate(law.r_max)} "
                   f"floor {format_rate(law.r_floor)}")
    if model is not None:
        out.append(f"capacity {model.capacity} packets, report interval {format_duration(model.interval_us * 1000)}")
    return out


def _rpc_message(exc: BaseException) -> str:
    details = getattr(exc, "details", None)
    code = getattr(exc, "code", None)
    if callable(details) and callable(code):
        return f"{code().name}: {details()}"
    return str(exc)
