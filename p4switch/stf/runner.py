"""Running an STF test on p4switch, in process and in virtual time.

Why in process: p4c's runner starts simple_switch on pcap files and sleeps between commands;
here the v1model core (:class:`~p4switch.v1model_arch.V1ModelSwitchCore`, walking on the
engine as p4switch does) runs on a :class:`~runtime.sched.VirtualScheduler`, and every command runs to completion (all packets
it caused have left) before the next, so a test takes milliseconds and never flakes.

Semantics kept from p4c's ``bmv2stf.py``: the ports a test uses are those its ``packet`` and
``expect`` lines name; frames sent to other ports are not seen. After the last command, each
such port must have sent exactly the frames expected on it, in order (``expect PORT`` without
data: any frames at all, unchecked); an expected frame matches when the frame is at least as
long (exactly as long with a final ``$``) and every hex digit but ``*`` is equal.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from p4switch.device import CompiledProgram, P4SwitchDevice, PipelineHolder, compile_file
from p4switch.frontend.errors import P4Error, format_error
from p4switch.p4runtime.device import PipelineLoadError
from p4switch.v1model_arch import V1ModelSwitchCore
from runtime.sched import VirtualScheduler

from .control import StfCommandError, StfControl
from .script import StfCommand, StfSyntaxError, parse_number, parse_stf, split_add

__all__ = ["StfResult", "run_stf_file", "run_stf_text", "match_frame"]

MAX_EVENTS_PER_COMMAND = 200_000  # a program that recirculates forever must still end
_STEP_NS = 1_000_000  # virtual time between two commands (1 ms; `wait`: 1 s)


@dataclass
class StfResult:
    passed: bool
    message: str  # '' when passed; else the first failure, with the STF file:line


@dataclass
class _Expect:
    where: str
    data: str | None  # None: any frame


def match_frame(expected: str, frame: bytes) -> str | None:
    """None when ``frame`` matches the STF ``expected`` hex (``*`` nibbles, final ``$``),
    else why not."""
    exact = expected.endswith("$")
    want = expected[:-1].upper() if exact else expected.upper()
    got = frame.hex().upper()
    if len(got) < len(want):
        return f"frame too short: {len(got) // 2} bytes, expected {len(want) / 2:g}"
    if exact and len(got) > len(want):
        return f"frame too long: {len(got) // 2} bytes, expected exactly {len(want) / 2:g}"
    for i, (w, g) in enumerate(zip(want, got)):
        if w != "*" and w != g:
            return f"differs at byte {i // 2} (hex digit {i})"
    return None


class _Run:
    """One STF run: the switch core, the control-plane commands, the frames seen per port."""

    def __init__(self, program: CompiledProgram) -> None:
        self.sched = VirtualScheduler()
        self.holder = PipelineHolder()
        self.sent: dict[int, list[bytes]] = defaultdict(list)
        self.core = V1ModelSwitchCore(self.sched, None, self.holder, self._emit, lambda _frame: False,
                                      cpu_port=None)
        self.receive = self._engine_walk()
        device = P4SwitchDevice(self.holder, self.receive, None, seed=0)
        self.state = device.install(program)
        self.control = StfControl(self.state)
        self.ports: set[int] = set()
        self.expects: dict[int, list[_Expect]] = defaultdict(list)
        self.any_ports: set[int] = set()

    def _engine_walk(self) -> Callable[[int, bytes], None]:
        """The walk p4switch runs (the engine's, which hands a pipeline it cannot run wholly to
        the core's), so that the corpus checks it; the core's alone without a built engine."""
        try:
            walk = self.core.use_engine_walk()
        except ImportError:
            return self.core.receive
        for port in range(self.core.tm.num_ports):
            walk.set_port(port, partial(self._emit, port))
        return walk.receive

    def _emit(self, port: int, frame: bytes) -> int:
        self.sent[port].append(frame)
        return 0

    def execute(self, cmd: StfCommand) -> None:
        name = cmd.name
        if name == "packet":
            port = int(cmd.args[0])
            self.ports.add(port)
            self.receive(port, bytes.fromhex(cmd.args[1]))
        elif name == "expect":
            port = int(cmd.args[0])
            self.ports.add(port)
            if cmd.args[1]:
                self.expects[port].append(_Expect(cmd.where, cmd.args[1]))
            else:
                self.any_ports.add(port)
        elif name == "add":
            self.control.add(split_add(cmd), cmd.where)
        elif name == "setdefault":
            self.control.setdefault(cmd)
        elif name == "remove":
            self.control.remove_all()
        elif name == "check_counter":
            self._check_counter(cmd)
        elif name in ("wait", "no_packet"):
            self.sched.run_for(1_000_000_000 if name == "wait" else 0)
        else:
            self.control.direct(cmd)
        self._drain(cmd)

    def _drain(self, cmd: StfCommand) -> None:
        ran = self.sched.run(MAX_EVENTS_PER_COMMAND)
        if ran >= MAX_EVENTS_PER_COMMAND and self.sched.pending():
            raise StfCommandError(f"{cmd.where}: the switch was still busy after {ran} events "
                                  "(a packet recirculating forever?)")
        self.sched.run_for(_STEP_NS)

    def _check_counter(self, cmd: StfCommand) -> None:
        """``check_counter NAME(INDEX|$ID) [packets|bytes OP VALUE]``: an indirect counter's
        cell, or the direct counter of the entry added with ``= ID``."""
        text = " ".join(cmd.args)
        name, _, rest = text.partition("(")
        index_text, _, cond = rest.partition(")")
        if not name or not index_text:
            raise StfSyntaxError(f"{cmd.where}: check_counter needs NAME(INDEX)")
        index: int | str = index_text.strip()
        if not str(index).startswith("$"):
            index = parse_number(index_text, cmd.where).value
        packets, nbytes = self.control.counter_value(name.strip(), index, cmd.where)
        words = cond.split()
        kind, op, value = (words + [None, None, None])[:3] if words else ("packets", "==", "0")
        if kind not in ("packets", "bytes") or op not in _OPS or value is None:
            raise StfSyntaxError(f"{cmd.where}: check_counter condition '{cond.strip()}' is not "
                                 "packets|bytes ==|!=|<|<=|>|>= VALUE")
        have = packets if kind == "packets" else nbytes
        want = parse_number(value, cmd.where).value
        if not _OPS[op](have, want):
            raise _Failure(f"{cmd.where}: counter {name.strip()}({index_text}) has {have} {kind}, "
                           f"expected {op} {want}")

    def verdict(self, stf_name: str) -> str:
        """'' when every port used sent what was expected, else the first difference."""
        for port in sorted(self.ports):
            if port in self.any_ports:
                continue
            expected, sent = self.expects.get(port, []), self.sent.get(port, [])
            for i, exp in enumerate(expected):
                if i >= len(sent):
                    return f"{exp.where}: expected packet {i + 1} on port {port} never came " \
                           f"({len(sent)} packet(s) sent on port {port})"
                why = match_frame(exp.data or "", sent[i])
                if why is not None:
                    return f"{exp.where}: packet {i + 1} on port {port} {why}: got {sent[i].hex()}"
            if len(sent) > len(expected):
                return f"{stf_name}: port {port} sent {len(sent)} packet(s), {len(expected)} expected; " \
                       f"extra: {sent[len(expected)].hex()}"
        return ""


class _Failure(Exception):
    """A check that failed (not an error in the test)."""


_OPS = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__, ">": int.__gt__,
        ">=": int.__ge__}


def run_stf_text(program: CompiledProgram, text: str, stf_name: str = "<stf>") -> StfResult:
    """Run STF ``text`` against an already compiled program."""
    try:
        commands = parse_stf(text, stf_name)
        run = _Run(program)
    except StfSyntaxError as exc:
        return StfResult(False, str(exc))
    except PipelineLoadError as exc:
        return StfResult(False, " ".join(str(exc).split("\n")[:2]))
    for cmd in commands:
        try:
            run.execute(cmd)
        except (StfSyntaxError, StfCommandError, _Failure) as exc:
            return StfResult(False, str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug here must still name the line, not kill a batch
            return StfResult(False, f"{cmd.where}: internal error of the STF runner: {type(exc).__name__}: {exc}")
    message = run.verdict(stf_name)
    return StfResult(not message, message)


def run_stf_file(program: Path, stf: Path, include_dirs: Sequence[Path] = ()) -> StfResult:
    """Compile ``program`` (a v1model .p4) and run the STF test ``stf`` on it.

    Never raises for a bad program or test: a program that does not compile, or whose pipeline
    cannot be built, fails with its located error (``file:line:col: error: ...``); a failure of
    the test itself names the STF ``file:line``. Only an unreadable file raises (OSError).
    """
    text = Path(stf).read_text(encoding="utf-8")
    try:
        compiled = compile_file(program, [str(d) for d in include_dirs])
        return run_stf_text(compiled, text, str(stf))
    except P4Error as err:
        return StfResult(False, format_error(err).splitlines()[0])
    except PipelineLoadError as exc:
        return StfResult(False, " ".join(str(exc).split("\n")[:2]))
