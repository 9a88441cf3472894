"""``p4switch``: run a P4_16 v1model program on Linux interfaces, like ``simple_switch_grpc``.

    p4switch [options] [FILE.p4]
    p4switch -i 1@veth1 -i 2@veth3 --cpu-port 255 p4src/alinea.p4
    p4switch -i 1@veth1 --no-p4             # wait for SetForwardingPipelineConfig
    p4switch --device-config build/alinea.p4switch.bin p4src/alinea.p4   # write it and exit

The program is p4c's BMv2 JSON (``p4switch build/alinea.json -- --cpu-port 255``, as
simple_switch_grpc) or P4 source (compiled by p4switch's own front end at start-up), told
apart by content; the P4Runtime device config likewise (the JSON's bytes, as BMv2, or the
preprocessed source, which ``--device-config`` writes). Differences from simple_switch_grpc,
on purpose: the CPU port defaults to 255
(``alinea.p4``'s ``CPU_PORT``) where BMv2 has none unless ``--cpu-port`` is given (pass
``--cpu-port none`` for BMv2's behaviour); gRPC listens on loopback by default; the device id
defaults to 0, as BMv2's. A BMv2-style ``--`` between the switch and the gRPC options is
accepted and ignored.

Errors (bad ``-i`` spec, missing interface, P4 errors with ``file:line:col``, an address in use)
print one clear message and exit non-zero, never a traceback (``P4SWITCH_TRACEBACK=1`` shows
one for internal errors). SIGINT/SIGTERM stop the servers, close the ports, flush the pcaps.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from p4switch.tm import QUEUE_MODELS
from runtime.arguments import ValueParser
from runtime.sched import RealtimeScheduler

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
LOG_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
              "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
              "off": logging.CRITICAL + 10}
#: ``--spin-us``: its default, and its bound (a spin longer than a millisecond saves no wake-up worth it)
SPIN_US, MAX_SPIN_US = RealtimeScheduler.SPIN_NS // 1000, 1000


def _port_number(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 510:
        raise argparse.ArgumentTypeError(f"port {value} out of range 0..510 (511 is the drop port)")
    return value


def _cpu_port(text: str) -> int | None:
    if text.lower() in ("none", "off", "-1"):
        return None
    return _port_number(text)


def _tcp_port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"TCP port {value} out of range 0..65535")
    return value


def _bitrate(text: str) -> tuple[int | None, int]:
    port_text, sep, rate_text = text.rpartition("=")
    try:
        rate = int(float(rate_text))
        port = _port_number(port_text) if sep else None
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"bad --port-bitrate {text!r}: expected [PORT=]BPS, e.g. 2=2000000") from None
    if rate <= 0:
        raise argparse.ArgumentTypeError(f"bad --port-bitrate {text!r}: the rate must be > 0 bits/s")
    return port, rate


def _link_loss(text: str) -> tuple[int, float]:
    type_text, sep, fraction_text = text.partition("=")
    try:
        ethertype = int(type_text, 0)
        fraction = float(fraction_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad --link-loss {text!r}: expected ETHERTYPE=FRACTION, "
                                         f"e.g. 0x88B5=0.1") from None
    if not sep or not 0 <= ethertype <= 0xFFFF:
        raise argparse.ArgumentTypeError(f"bad --link-loss {text!r}: the EtherType must be 0..0xFFFF")
    if not 0 <= fraction < 1:
        raise argparse.ArgumentTypeError(f"bad --link-loss {text!r}: the fraction must be in [0, 1)")
    return ethertype, fraction


_TIME_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def _delay(text: str) -> tuple[int | None, int]:
    port_text, sep, delay_text = text.rpartition("=")
    number = delay_text.rstrip("numsµ")
    unit = delay_text[len(number):].replace("µ", "u") or "s"
    try:
        port = _port_number(port_text) if sep else None
        delay = round(float(number) * _TIME_UNITS[unit])
    except (ValueError, KeyError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"bad --port-delay {text!r}: expected [PORT=]TIME, e.g. 2=3ms") from None
    if delay < 0:
        raise argparse.ArgumentTypeError(f"bad --port-delay {text!r}: the delay must be >= 0")
    return port, delay


def _interface(text: str) -> tuple[int, str]:
    from runtime.ports import PortError, parse_interface_spec

    try:
        return parse_interface_spec(text)
    except PortError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = ValueParser(  # `--port-delay -5ms` reaches _delay's one-line error (runtime/arguments.py)
        prog="p4switch",
        description="Run a P4_16 v1model program (P4 source) on Linux interfaces, with a P4Runtime gRPC "
                    "server and the BMv2 SimpleSwitch Thrift queue calls, like simple_switch_grpc.",
        epilog="Example: p4switch -i 1@veth1 -i 2@veth3 --cpu-port 255 p4src/alinea.p4")
    p.add_argument("program", nargs="?", metavar="PROG.json|FILE.p4",
                   help="program to run: p4c's BMv2 JSON (as simple_switch_grpc; a NAME.p4info.txtpb beside it "
                        "is read too) or P4_16 source, told apart by content (omit with --no-p4 to wait for "
                        "SetForwardingPipelineConfig)")
    p.add_argument("-i", "--interface", dest="interfaces", action="append", default=[], type=_interface,
                   metavar="PORT@IFACE", help="attach switch port PORT to Linux interface IFACE (repeatable)")
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (default 0, as BMv2)")
    p.add_argument("--grpc-server-addr", default="127.0.0.1:9559", metavar="HOST:PORT",
                   help="P4Runtime gRPC address (default 127.0.0.1:9559)")
    p.add_argument("--no-grpc", action="store_true", help="do not start the P4Runtime gRPC server")
    p.add_argument("--thrift-port", type=_tcp_port, default=9090,
                   help="BMv2 Thrift runtime port on 127.0.0.1 (default 9090; 0 picks a free one)")
    p.add_argument("--no-thrift", action="store_true", help="do not start the Thrift server")
    p.add_argument("--cpu-port", type=_cpu_port, default=255, metavar="PORT|none",
                   help="port whose frames go to/come from the controller (packet-in/out); default 255 "
                        "(alinea.p4's CPU_PORT; BMv2 has none by default: 'none')")
    p.add_argument("--pcap", metavar="DIR", nargs="?", const=".",
                   help="write <iface>_in.pcap / <iface>_out.pcap per port into DIR (default: the current "
                        "directory, as BMv2's --pcap)")
    p.add_argument("--log-console", action="store_true", help="log to standard error")
    p.add_argument("--log-file", metavar="FILE", help="log to FILE")
    p.add_argument("-L", "--log-level", choices=sorted(LOG_LEVELS), default="info",
                   help="log level (default info; 'debug'/'trace' log every packet and drop: slow)")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a program and wait for the controller's SetForwardingPipelineConfig")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the P4 #include search path")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro for the P4 program")
    p.add_argument("--device-config", metavar="OUT",
                   help="write the P4Runtime device config of FILE.p4 (its preprocessed source) to OUT and exit; "
                        "with --p4info also its P4Info")
    p.add_argument("--p4info", metavar="OUT", help="with --device-config: also write the P4Info (text format)")
    p.add_argument("--queue-depth", type=int, default=64, help="egress queue depth in packets (default 64)")
    p.add_argument("--queue-rate", type=int, default=0, metavar="PPS",
                   help="egress queue rate in packets/s (default 0: unlimited)")
    p.add_argument("--priority-queues", type=int, default=1, help="priority queues per port (1..8, default 1)")
    p.add_argument("--queue-model", choices=QUEUE_MODELS, default="bmv2",
                   help="egress queue rate limiter: bmv2 (default; a packet's departure is fixed when it is "
                        "queued, as simple_switch does) or shaper (the rate in force at dequeue spaces the "
                        "packets, as a hardware shaper does); docs/reference/p4switch.md")
    p.add_argument("--port-bitrate", dest="port_bitrates", action="append", default=[], type=_bitrate,
                   metavar="[PORT=]BPS",
                   help="model a link of BPS bits/s on PORT (or on every port): the port does not send faster, "
                        "frames wait in its egress queue (repeatable; veth pairs have no rate of their own)")
    p.add_argument("--port-delay", dest="port_delays", action="append", default=[], type=_delay,
                   metavar="[PORT=]TIME",
                   help="model a propagation delay of TIME (e.g. 3ms) on PORT (or on every port): frames leave "
                        "the port that much later (repeatable; veth pairs have no delay of their own)")
    p.add_argument("--port-overhead", type=int, default=24, metavar="BYTES",
                   help="link model: bytes each frame adds on the wire (default 24: preamble, SFD, FCS, gap; "
                        "0 counts frame bytes only, as the simulator's topologies do)")
    p.add_argument("--port-min-frame", type=int, default=60, metavar="BYTES",
                   help="link model: frames shorter than this are padded on the wire (default 60)")
    p.add_argument("--link-loss", dest="link_loss", action="append", default=[], type=_link_loss,
                   metavar="ETHERTYPE=FRACTION",
                   help="p4switch extension: lose this fraction of the frames of EtherType on every port's wire "
                        "(seeded by --seed), e.g. 0x88B5=0.1 for ALINEA reports")
    p.add_argument("--control-socket", metavar="PATH",
                   help="p4switch extension: a Unix socket to change port bit rates at run time and read the "
                        "traffic manager's tail drops (docs/reference/p4switch.md)")
    p.add_argument("--seed", type=int, help="seed of the program's random() extern")
    p.add_argument("--spin-us", type=int, default=SPIN_US, metavar="US",
                   help=f"p4switch extension: wait for a timer due within US microseconds by spinning, not "
                        f"sleeping (default {SPIN_US}: low added latency, but a busy switch keeps a core busy; "
                        f"0 never spins, for a switch that shares its cores with the rest of an emulation)")
    return p


def _normalise(argv: Sequence[str]) -> list[str]:
    """Drop BMv2's ``--`` separator (simple_switch_grpc takes target options after it)."""
    return [a for a in argv if a != "--"]


def _setup_logging(args: argparse.Namespace) -> list[logging.Handler]:
    """Root handlers as asked (returned, so main() can remove them: it may run in-process)."""
    level = LOG_LEVELS[args.log_level]
    root = logging.getLogger()
    root.setLevel(level)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = []
    if args.log_console:
        handlers.append(logging.StreamHandler(sys.stderr))
    if args.log_file:
        handlers.append(logging.FileHandler(args.log_file))
    if not handlers:  # warnings and errors always reach the user
        h = logging.StreamHandler(sys.stderr)
        h.setLevel(logging.WARNING)
        handlers.append(h)
    for h in handlers:
        h.setFormatter(fmt)
        root.addHandler(h)
    return handlers


def _write_device_config(args: argparse.Namespace) -> int:
    from p4switch.device import build_pipeline, compile_file

    if not args.program:
        print("p4switch: error: --device-config needs FILE.p4", file=sys.stderr)
        return EXIT_USAGE
    program = compile_file(args.program, args.include_dirs, args.defines)
    build_pipeline(program)  # a config the switch would refuse is not written (PipelineLoadError)
    _write(args.device_config, program.device_config)
    if args.p4info:
        from google.protobuf import text_format

        _write(args.p4info, text_format.MessageToString(program.p4info).encode())
    return EXIT_OK


def _write(path: str, data: bytes) -> None:
    out = Path(path)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)


def _options(args: argparse.Namespace) -> Any:
    from p4switch.switch import SwitchOptions

    return SwitchOptions(
        device_id=args.device_id, cpu_port=args.cpu_port, interfaces=list(args.interfaces),
        program=None if args.no_p4 else args.program, include_dirs=list(args.include_dirs),
        defines=list(args.defines), grpc_addr=None if args.no_grpc else args.grpc_server_addr,
        thrift_port=None if args.no_thrift else args.thrift_port, pcap_dir=args.pcap,
        queue_depth=args.queue_depth, queue_rate_pps=args.queue_rate, priority_queues=args.priority_queues,
        queue_model=args.queue_model,
        port_bitrate_bps=next((r for p, r in reversed(args.port_bitrates) if p is None), 0),
        port_bitrates={p: r for p, r in args.port_bitrates if p is not None},
        port_delay_ns=next((d for p, d in reversed(args.port_delays) if p is None), 0),
        port_delays={p: d for p, d in args.port_delays if p is not None}, seed=args.seed,
        port_overhead_bytes=args.port_overhead, port_min_frame_bytes=args.port_min_frame,
        link_loss=dict(args.link_loss), control_socket=args.control_socket, spin_ns=args.spin_us * 1000)


def _validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.program and args.no_p4:
        parser.error("give either FILE.p4 or --no-p4, not both")
    if not args.program and not args.no_p4 and not args.device_config:
        parser.error("no P4 program: give FILE.p4, or --no-p4 to wait for the controller's pipeline")
    if args.p4info and not args.device_config:
        parser.error("--p4info is only used with --device-config")
    if not 0 <= args.queue_depth < (1 << 19):
        parser.error(f"--queue-depth {args.queue_depth} out of range 0..{(1 << 19) - 1}")
    for name in ("port_overhead", "port_min_frame"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)} must be >= 0")
    if args.queue_rate < 0:
        parser.error(f"--queue-rate {args.queue_rate} must be >= 0")
    if not 1 <= args.priority_queues <= 8:
        parser.error(f"--priority-queues {args.priority_queues} out of range 1..8")
    if not 0 <= args.spin_us <= MAX_SPIN_US:
        parser.error(f"--spin-us {args.spin_us} out of range 0..{MAX_SPIN_US}")


def _serve(args: argparse.Namespace) -> int:
    from p4switch.switch import Switch

    stopping: list[int] = []
    built: list[Switch] = []

    def on_signal(signum: int, _frame: Any) -> None:
        logging.getLogger(__name__).info("signal %d: stopping", signum)
        stopping.append(signum)
        for sw in built:
            sw.stop()

    # installed before the servers listen: a signal sent once the ports answer stops cleanly
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        switch = Switch.from_args(_options(args))
    except BaseException:
        for s, h in old.items():
            signal.signal(s, h)
        raise
    built.append(switch)
    if stopping:
        switch.stop()
    try:
        ports = ", ".join(f"{n}@{p.name}" for n, p in sorted(switch.ports.items())) or "none"
        grpc = switch.options.grpc_addr or "off"
        thrift = f"127.0.0.1:{switch.thrift_server.port}" if switch.thrift_server else "off"
        program = args.program if not args.no_p4 else "none (waiting for SetForwardingPipelineConfig)"
        print(f"p4switch: running {program}; ports {ports}; P4Runtime {grpc} (device {args.device_id}); "
              f"Thrift {thrift}; CPU port {switch.options.cpu_port}", file=sys.stderr, flush=True)
        switch.run_forever()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        switch.close()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``p4switch`` console script; returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(_normalise(sys.argv[1:] if argv is None else argv))
    if unknown:
        flags = [a for a in unknown if a.startswith("-")] or unknown
        print(f"p4switch: error: unknown option{'s' if len(flags) > 1 else ''} {' '.join(flags)} "
              f"(p4switch --help lists the simple_switch_grpc options it takes)", file=sys.stderr)
        return EXIT_USAGE
    _validate(args, parser)
    from p4switch.bmv2json import Bmv2JsonError
    from p4switch.frontend.errors import P4Error, format_error
    from p4switch.p4runtime.device import PipelineLoadError
    from p4switch.switch import SwitchError
    from runtime.ports import PortError

    root = logging.getLogger()
    old_level, handlers = root.level, []
    try:
        if args.device_config:
            return _write_device_config(args)
        handlers = _setup_logging(args)
        return _serve(args)
    except P4Error as err:
        print(format_error(err), file=sys.stderr)
        return EXIT_ERROR
    except (PortError, SwitchError, PipelineLoadError, Bmv2JsonError) as exc:
        print(f"p4switch: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"p4switch: error: {exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}",
              file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_OK
    except Exception as exc:
        if os.environ.get("P4SWITCH_TRACEBACK") == "1":
            raise
        print(f"p4switch: internal error: {type(exc).__name__}: {exc} (set P4SWITCH_TRACEBACK=1 for details)",
              file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        for h in handlers:
            root.removeHandler(h)
            h.close()
        root.setLevel(old_level)


if __name__ == "__main__":
    sys.exit(main())
