"""The netns backend: a topology as real processes on real (veth) links, in real time.

Same interface as :class:`topo.sim.network.SimNetwork` (``build()``, ``run_until(t_ns)``,
``finish()``, ``recorder``, ``counts``, ``packet_hops()``) plus ``close()``, so
:func:`topo.run.runner.run_experiment` writes the same CSVs, summary and figures. The shape is
Mininet's:

* every switch is a process in the ROOT namespace (``p4switch`` or BMv2's
  ``simple_switch_grpc``, started ``--no-p4`` with the documented command line), its gRPC and
  Thrift on 127.0.0.1 at free ports, its ports the root-side ends of veth pairs;
* every host is a namespace ``PREFIX-HOST`` with one interface ``eth0`` and a process
  (:mod:`topo.netns.host`) running the simulator's host code on an AF_PACKET socket;
* every switch agent runs HERE, over real gRPC (:class:`GrpcController`, packet-ins handed to
  one :class:`RealtimeScheduler` loop) and real Thrift (:func:`controlplane.queues.connect`).

Links: a switch port models its link's rate and propagation delay (``--port-bitrate``,
``--port-delay``); a host models its own uplink. BMv2 has no link model: ``tc netem`` on its
interfaces, or where the kernel has no netem one :mod:`topo.netns.linkemu` process per link, between
the switch's interface and its neighbour's. The run directory gets ``network.json``
(every switch's addresses, ports, interfaces, logs, pcaps) as soon as the switches are up, so
``hbh params --run DIR``, ``hbh shell --run DIR`` and ``simple_switch_CLI --thrift-port`` reach
the live network. Run time 0 (``t0``) is one instant on CLOCK_MONOTONIC, shared by every
process of the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane import params_io
from controlplane.agent import LawTrace
from controlplane.p4runtime_client import GrpcController
from controlplane.queues import QueueClient
from controlplane.queues import connect as thrift_connect
from controlplane.report import ETHERTYPE_ALINEA
from controlplane.switch_agent import SwitchAgent
from hosts.tcp import SIM_ONLY_CC
from p4switch.control import ControlError, control_call
from runtime.sched import RealtimeScheduler
from topo.net.invariants import (
    EndState,
    FlowEnd,
    Place,
    flow_places,
    max_frame_bytes,
    place_egress,
    place_in,
    place_link,
    place_rx,
    place_tx,
)
from topo.net.model import Event, Topology
from topo.net.plan import network_mode, priority_queues, switch_plan
from topo.net.record import DropSample, FlowSample, LinkSample, Recorder
from topo.net.stats import percentile
from topo.netns.keepup import RELAY_STALL_NS, CpuMeter, keepup_summary, relay_summary, verdict
from topo.netns.link_pacing import LinkPacing, ceilings, hidden_queue_notice, paced_ways
from topo.netns.live import port_records
from topo.netns.pace import KERNEL_CC
from topo.netns.plumbing import (
    CMD_TIMEOUT_S,
    NetnsError,
    Plumbing,
    clean,
    control_socket_path,
    emulator_ifname,
    new_prefix,
    require_root,
    switch_ifname,
)
from topo.netns.switches import (
    PORT_RETRIES,
    START_TIMEOUT_S,
    LinkEmuProcess,
    LinkEmuSpec,
    SwitchProcess,
    SwitchSpec,
    bmv2_command,
    check_bmv2_tools,
    free_tcp_port,
    p4switch_command,
    pdeathsig,
    read_line,
    switch_spin_us,
)
from topo.sim.network import (
    AGENT_TICK_NS,
    DROP_SAMPLE_NS,
    HOST_TX_QUEUE,
    SAMPLE_NS,
    fifo_rows,
    read_drop_counters,
)

__all__ = ["NetnsNetwork", "TARGETS", "AGENT_ELECTION_ID"]

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
P4_BUILD = ROOT / "build"  # where `make p4` writes p4c's alinea.json and P4Info
TARGETS = ("p4switch", "bmv2")
AGENT_ELECTION_ID = (0, 10)  # below `hbh params set` (1, 0), above `hbh shell` (0, 5)
START_LEAD_NS = 500_000_000  # t0 this far after every host said ready
HOST_READY_TIMEOUT_S = 60.0
NOT_FOUND = 5  # google.rpc.Code: arbitration says there is no primary
#: how late a count may be against its sample's nominal time in a run that kept up (topo/net/invariants.py's
#: slack): a frame reaches its socket up to RELAY_STALL_NS late (topo/netns/keepup.py), and reading a
#: sample's counters takes a few ms after the wake-up (whose own lateness is measured)
LATE_READ_NS = RELAY_STALL_NS + 5_000_000


@dataclass
class _SwitchNode:
    spec: SwitchSpec
    process: SwitchProcess
    agent: SwitchAgent | None = None
    client: GrpcController | None = None
    queues: QueueClient | None = None
    sched: RealtimeScheduler | None = None
    offset_ns: int = 0  # this agent's scheduler time minus run time


@dataclass
class _HostProc:
    name: str
    ns: str
    out: Path
    proc: subprocess.Popen
    results: dict[str, Any] | None = None


class NetnsNetwork:
    """Build with :meth:`build`, then :meth:`run_until` (real time); results in ``recorder``.

    Always :meth:`close` it (``with NetnsNetwork(...) as net``): that ends every process and
    removes every namespace and interface, also after an error.
    """

    def __init__(self, topo: Topology, seed: int = 1, *, duration_ns: int, run_dir: Path,
                 target: str = "p4switch", pcap: bool = True) -> None:
        if target not in TARGETS:
            raise NetnsError(f"--target {target!r}: choose one of {', '.join(TARGETS)}")
        self.topo = topo
        self.seed = seed
        self.duration_ns = duration_ns
        self.run_dir = Path(run_dir)
        self.target = target
        self.pcap = pcap
        self.prefix = new_prefix()
        self.recorder = Recorder()
        self.counts: dict[str, int] = {"receiver_overflow": 0, "reports_lost": 0}
        self.plumbing = Plumbing(self.prefix)
        self.switches: dict[str, _SwitchNode] = {}
        self.hosts: dict[str, _HostProc] = {}
        self.t0_ns = 0  # CLOCK_MONOTONIC of run time 0
        self._next_sample = 0
        self._lateness_ns: list[int] = []  # how late each sampling wake-up came (topo/netns/keepup.py)
        self._cpu = CpuMeter()  # the cores the run's processes kept busy (topo/netns/keepup.py)
        self._next_drops = 0
        self._events = sorted((ev for ev in topo.events if ev.kind in ("alinea", "link_rate")), key=lambda e: e.at_ns)
        self._rates = {(link.a, link.b): round(link.rate_bps) for link in topo.links}  # current, per link
        self._link_bytes: dict[tuple[str, str], tuple[str, str]] = {}  # (u, v) -> (interface, rx|tx)
        self._closed = False
        self.notices: list[str] = []
        self._said: set[str] = set()
        self._hop_by_hop = network_mode(topo) == "hop-by-hop"
        self._stream_lost: set[str] = set()
        #: how links get their rate and delay: "p4switch" (its ports), "netem" or "linkemu" (BMv2)
        self.link_mode = "p4switch"
        self.emulator_specs: dict[tuple[str, str], LinkEmuSpec] = {}  # (a, b) of a topology link
        self.emulators: dict[tuple[str, str], LinkEmuProcess] = {}
        self._recording = True  # agents' law rows go to the recorder (on the agents' loop thread)
        #: BMv2 with emulated links: each port's egress at its link's rate (topo/netns/link_pacing.py)
        self.pacing: LinkPacing | None = None

    # ---- construction ------------------------------------------------------------------------------
    def build(self) -> NetnsNetwork:
        require_root()
        self._refuse_unsupported()
        if self.target == "bmv2":
            check_bmv2_tools()
        found = clean()  # leftovers of runs that died without cleaning up
        if found:
            self._notice(f"removed leftovers of earlier runs: {found.summary()}")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "logs").mkdir(exist_ok=True)
        self.plumbing.mark()
        self._log_handler = logging.FileHandler(self.run_dir / "logs" / "agents.log")
        self._log_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(self._log_handler)
        if logging.getLogger().level > logging.INFO:
            logging.getLogger().setLevel(logging.INFO)
        self._make_links()
        self._start_switches()
        self._spawn_hosts()  # before any gRPC channel exists: forking then is clean
        self._write_network_json()
        self._start_agents()
        self._go()
        return self

    def _notice(self, text: str) -> None:
        self.notices.append(text)
        print(f"hbh run (netns): {text}", file=sys.stderr, flush=True)

    def _refuse_unsupported(self) -> None:
        """BMv2 has no per-EtherType loss on its wires (p4switch: ``--link-loss``); the kernel has no
        ``cc: none`` (the simulator's TCP model, hosts/tcp/__init__.py); ``cc: cvihis-rtm`` runs on the
        kernel's TCP paced by CVIHIS (topo/netns/pace.py)."""
        for f in self.topo.flows:
            if f.control == "tcp" and f.cc in SIM_ONLY_CC and f.cc not in KERNEL_CC:
                raise NetnsError(f"{self.topo.source}:{f.line}: flow {f.name}: cc {f.cc} is {SIM_ONLY_CC[f.cc]}; "
                                 "no kernel offers it: use --backend sim")
        lossy = next((link for link in self.topo.links if link.loss > 0), None)
        if lossy is not None:
            raise NetnsError(f"{self.topo.source}:{lossy.line}: link {lossy.a}-{lossy.b}: loss (random link loss) is "
                             "the simulator's only: use --backend sim")
        if self.topo.options.nak_aggregation_ns:
            raise NetnsError(f"{self.topo.source}: options.nak_aggregation: the netns backend does not write the "
                             "switches' nak_aggregation entries yet: use --backend sim")
        if self.topo.options.report_loss > 0 and self.target == "bmv2":
            raise NetnsError(f"{self.topo.source}: options.report_loss is emulated by p4switch's links only "
                             "(--link-loss); BMv2 has no such loss model: use --target p4switch or --backend sim")

    def _choose_link_mode(self) -> None:
        """BMv2 has no link model: tc netem where the kernel has it, else link emulator processes
        (said once, here, at start)."""
        if self.target != "bmv2":
            return
        missing = netem_missing(self.prefix)
        if missing is None:
            self.link_mode = "netem"
            self._notice("links: rate and delay by tc netem on each switch interface (away from the switch; "
                         "hosts pace their own uplink)")
            return
        self.link_mode = "linkemu"
        self._notice(f"links: tc netem unavailable ({missing}); rate and delay emulated by {len(self.topo.links)} "
                     "hbh link emulator processes (python -m topo.netns.linkemu: AF_PACKET between each switch "
                     "interface and its neighbour, p4switch's link model; docs/howto/bmv2.md)")

    def _make_links(self) -> None:
        topo, pre = self.topo, self.prefix
        self._choose_link_mode()
        emulate = self.link_mode == "linkemu"
        for node in topo.hosts:
            self.plumbing.add_namespace(node.name)
        for link in topo.links:
            na, nb = topo.nodes[link.a], topo.nodes[link.b]
            if na.is_switch and nb.is_switch:
                ia, ib = (switch_ifname(pre, n.index, topo.port(n.name, o.name)) for n, o in ((na, nb), (nb, na)))
                if not emulate:
                    self.plumbing.add_switch_link(ia, ib)
                    self._link_bytes[(na.name, nb.name)] = (ia, "tx")
                    self._link_bytes[(nb.name, na.name)] = (ib, "tx")
                    continue
                ea, eb = emulator_ifname(ia), emulator_ifname(ib)
                self.plumbing.add_switch_link(ia, ea)
                self.plumbing.add_switch_link(ib, eb)
                self._add_emulator(link, ea, eb, both_ways=True)
                self._link_bytes[(na.name, nb.name)] = (ib, "rx")  # what left the emulator, shaped
                self._link_bytes[(nb.name, na.name)] = (ia, "rx")
                continue
            sw, host = (na, nb) if na.is_switch else (nb, na)
            end = switch_ifname(pre, sw.index, topo.port(sw.name, host.name))
            mac = topo.mac(host.name).to_bytes(6, "big").hex(":")
            host_tmp = f"{pre}{host.index}h"
            if not emulate:
                self.plumbing.add_host_link(end, f"{pre}-{host.name}", host_tmp, mac)
                self._link_bytes[(sw.name, host.name)] = (end, "tx")
                self._link_bytes[(host.name, sw.name)] = (end, "rx")
                continue
            ea, eh = emulator_ifname(end), emulator_ifname(host_tmp)
            self.plumbing.add_switch_link(end, ea)
            self.plumbing.add_host_link(eh, f"{pre}-{host.name}", host_tmp, mac)
            self._add_emulator(link, ea, eh, both_ways=False)  # the host paces its own uplink
            self._link_bytes[(sw.name, host.name)] = (eh, "tx")
            self._link_bytes[(host.name, sw.name)] = (end, "rx")
        if emulate:
            self._start_emulators()

    def _add_emulator(self, link: Any, a: str, b: str, *, both_ways: bool) -> None:
        """``a``: the emulator's end toward the link's first switch; ``b``: toward its neighbour."""
        name = f"{link.a}-{link.b}"
        spec = LinkEmuSpec(name=name, a=a, b=b, bitrate_bps=round(link.rate_bps), delay_ns=link.delay_ns,
                           both_ways=both_ways, control_socket=control_socket_path(self.prefix, f"link-{name}"),
                           log_file=str(self.run_dir / "logs" / f"linkemu-{name}.log"))
        self.emulator_specs[(link.a, link.b)] = spec

    def _start_emulators(self) -> None:
        for key, spec in self.emulator_specs.items():
            self.emulators[key] = LinkEmuProcess(spec, ROOT)
        deadline = time.monotonic() + START_TIMEOUT_S
        for emu in self.emulators.values():
            emu.wait_ready(deadline)

    def _spec(self, name: str) -> SwitchSpec:
        topo = self.topo
        node = topo.nodes[name]
        ports = {topo.port(name, nb): nb for nb in topo.neighbours(name)}
        logs = self.run_dir / "logs"
        spec = SwitchSpec(
            name=name, device_id=node.index,
            interfaces=[(p, switch_ifname(self.prefix, node.index, p)) for p in sorted(ports)],
            grpc_port=free_tcp_port(), thrift_port=free_tcp_port(), log_file=str(logs / f"{name}.log"),
            pcap_dir=str(self.run_dir / "pcap" / name) if self.pcap else None)
        for p, nb in ports.items():
            link = topo.link_between(name, nb)
            spec.bitrates[p] = round(link.rate_bps)
            spec.delays[p] = link.delay_ns
        spec.queue_model = topo.options.queue_model
        spec.priority_queues = priority_queues(topo.options.classes)
        spec.spin_us = switch_spin_us(len(topo.nodes) + 1, len(os.sched_getaffinity(0)))
        # a short path: a Unix socket's path is limited to 107 bytes; the switch removes it when it stops
        spec.control_socket = control_socket_path(self.prefix, name)
        if topo.options.report_loss > 0:
            spec.link_loss[ETHERTYPE_ALINEA] = topo.options.report_loss
            spec.seed = self.seed * 1000 + node.index
        return spec

    def _start_switches(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        for node in self.topo.switches:
            self._spawn_switch(node.name)
        for name in list(self.switches):
            self._wait_switch(name, deadline)
        if self.target == "bmv2" and self.topo.options.queue_model != "bmv2":
            self._notice(f"options.queue_model: {self.topo.options.queue_model} models p4switch's queues; "
                         "BMv2's egress queues fix each packet's departure when it is queued (docs/howto/bmv2.md)")
        if self.link_mode == "netem":
            self._netem_links()

    def _spawn_switch(self, name: str) -> None:
        spec = self._spec(name)
        if spec.pcap_dir:
            Path(spec.pcap_dir).mkdir(parents=True, exist_ok=True)
        cmd = p4switch_command(spec) if self.target == "p4switch" else bmv2_command(spec)
        self.switches[name] = _SwitchNode(spec, SwitchProcess(spec, cmd, ROOT))

    def _wait_switch(self, name: str, deadline: float) -> None:
        """Wait for a switch's ports; one that lost a port to another process between the probe and
        its bind is started again on fresh ports, at most PORT_RETRIES times."""
        for attempt in range(PORT_RETRIES + 1):
            process = self.switches[name].process
            try:
                process.wait_ready(deadline)
                return
            except NetnsError:
                if attempt == PORT_RETRIES or not process.lost_port():
                    raise
            process.stop()
            self._notice(f"{name}: port {process.spec.grpc_port} or {process.spec.thrift_port} was taken "
                         "before the switch bound it; starting it again on other ports")
            self._spawn_switch(name)

    def _netem_links(self) -> None:
        """BMv2 has no link model: rate and delay by ``tc netem`` on the switch's interfaces."""
        for sw in self.switches.values():
            for port, ifname in sw.spec.interfaces:
                rate, delay = sw.spec.bitrates[port], sw.spec.delays[port]
                proc = subprocess.run(netem_command(ifname, rate, delay), capture_output=True, text=True,
                                      timeout=CMD_TIMEOUT_S)
                if proc.returncode != 0:
                    raise NetnsError(f"tc netem on {ifname} failed ({proc.stderr.strip()}), though it worked on "
                                     "a probe interface at start")

    def network_info(self) -> dict[str, Any]:
        topo = self.topo
        return {
            "prefix": self.prefix, "runner_pid": os.getpid(), "target": self.target, "topology": topo.name,
            "t0_monotonic_ns": self.t0_ns or None,
            "switches": {name: {
                "grpc_addr": sw.spec.grpc_addr, "thrift_port": sw.spec.thrift_port, "device_id": sw.spec.device_id,
                "pid": sw.process.proc.pid, "interfaces": {str(p): i for p, i in sw.spec.interfaces},
                "neighbours": {str(topo.port(name, nb)): nb for nb in topo.neighbours(name)},
                "log_file": sw.spec.log_file, "pcap_dir": sw.spec.pcap_dir, "command": sw.process.command,
                "thrift_cli": f"simple_switch_CLI --thrift-port {sw.spec.thrift_port}",
                "agent_election_id": list(AGENT_ELECTION_ID), "ports": port_records(topo, name)}
                for name, sw in self.switches.items()},
            "links": {"emulation": self.link_mode, "emulators": {
                emu.spec.name: {"pid": emu.proc.pid, "a": emu.spec.a, "b": emu.spec.b,
                                "control_socket": emu.spec.control_socket, "command": emu.command}
                for emu in self.emulators.values()}},
            "hosts": {node.name: {"netns": f"{self.prefix}-{node.name}", "ifname": "eth0",
                                  "pid": self.hosts[node.name].proc.pid if node.name in self.hosts else None}
                      for node in topo.hosts},
        }

    def _write_network_json(self) -> None:
        path = self.run_dir / "network.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.network_info(), indent=1) + "\n")
        tmp.rename(path)

    def _start_agents(self) -> None:
        """One agent per switch, each on its own RealtimeScheduler loop thread.

        Why one loop each: an agent's reaction to a report is a Thrift round trip to its
        switch; on one shared loop the five agents of paper-5router waited for each other's
        round trips (the GIL is released while a call waits on its socket).
        """
        program = self._program()
        ways = paced_ways(self.topo, {k: s.control_socket for k, s in self.emulator_specs.items()}
                          if self.link_mode == "linkemu" else {}) if self.link_mode in ("netem", "linkemu") else []
        for name, sw in self.switches.items():
            sw.sched = RealtimeScheduler()
            sw.sched.start()
            agent_box: list[SwitchAgent] = []
            sw.client = GrpcController(sw.spec.grpc_addr, sw.spec.device_id, election=AGENT_ELECTION_ID,
                                       on_message=_guarded(name, agent_box))
            sw.queues = thrift_connect("127.0.0.1", sw.spec.thrift_port)
            plan = switch_plan(self.topo, name, fixed_departures=self.target == "bmv2" or None)
            if ways:  # each emulated port's egress within its link's rate (topo/netns/link_pacing.py)
                plan = dataclasses.replace(plan, link_ceilings=ceilings(self.topo, ways, name))
            agent = SwitchAgent(plan, sw.client, sw.queues, sw.sched,
                                tick_ns=AGENT_TICK_NS, on_trace=self._law_trace(name))
            agent_box.append(agent)
            sw.agent = agent
            sw.sched.run_sync(agent.install, program[0], program[1], timeout=60)
        if ways:
            self.pacing = LinkPacing(ways, {n: sw.agent for n, sw in self.switches.items()},
                                     lambda n, fn, *a: self.switches[n].sched.call_soon_threadsafe(fn, *a),  # type: ignore[union-attr]
                                     lambda sock: control_call(sock, "stats"),
                                     {(ln.a, ln.b): ln.rate_bps for ln in self.topo.links})

    def _program(self) -> tuple[Any, bytes]:
        if self.target == "p4switch":  # p4c's JSON when `make p4` wrote a current one, else the source
            from p4switch.bmv2json.build import compiled_json, other_program, program_sources
            from topo.sim.network import PROGRAM, alinea_program

            prog = alinea_program()
            found = compiled_json(P4_BUILD, "alinea", program_sources(PROGRAM))
            if not isinstance(found, str):
                info, config = found.load()
                why = other_program(info, prog.p4info)
                if why is None:
                    self._notice(f"switches run p4c's {found.json_path}")
                    return info, config
                found = f"{found.json_path} is another program: {why} (run `make p4` again)"
            self._notice(f"switches run {PROGRAM.name} from source: {found}")
            return prog.p4info, prog.device_config
        from google.protobuf import text_format
        from p4.config.v1 import p4info_pb2

        build = ROOT / "build"
        for f in ("alinea.json", "alinea.p4info.txtpb"):
            if not (build / f).exists():
                raise NetnsError(f"--target bmv2: {build / f} is missing: run `make p4` (needs p4c)")
        info = text_format.Parse((build / "alinea.p4info.txtpb").read_text(), p4info_pb2.P4Info())
        return info, (build / "alinea.json").read_bytes()

    def _law_trace(self, name: str) -> Callable[[LawTrace], None]:
        def trace(t: LawTrace) -> None:
            if not self._recording:
                return
            t.t_ns -= self.switches[name].offset_ns  # on the runner's clock
            self.recorder.laws.append(t)

        return trace

    def _spawn_hosts(self) -> None:
        hosts_dir = self.run_dir / ".netns"
        hosts_dir.mkdir(exist_ok=True)
        topo_file = hosts_dir / "topology.pkl"
        topo_file.write_bytes(pickle.dumps(self.topo))
        for node in self.topo.hosts:
            ns = f"{self.prefix}-{node.name}"
            out = hosts_dir / f"{node.name}.pkl"
            with contextlib.suppress(OSError):
                out.unlink()
            cmd = ["ip", "netns", "exec", ns, sys.executable, "-m", "topo.netns.host", "--topology", str(topo_file),
                   "--host", node.name, "--seed", str(self.seed), "--duration-ns", str(self.duration_ns),
                   "--out", str(out), "--prefix", self.prefix]
            err = open(self.run_dir / "logs" / f"{node.name}.log", "w")  # noqa: SIM115 - the child keeps it
            proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                    text=True, preexec_fn=pdeathsig)
            err.close()
            self.hosts[node.name] = _HostProc(node.name, ns, out, proc)
        deadline = time.monotonic() + HOST_READY_TIMEOUT_S
        for h in self.hosts.values():
            line = read_line(h.proc, deadline)
            if line != "ready":
                raise NetnsError(f"host {h.name} did not start (exit status {h.proc.poll()}); see "
                                 f"{self.run_dir / 'logs' / (h.name + '.log')}")

    def _go(self) -> None:
        """Run time 0: a moment shortly ahead, told to every host."""
        self.t0_ns = time.monotonic_ns() + START_LEAD_NS
        for sw in self.switches.values():
            assert sw.sched is not None
            sw.offset_ns = self.t0_ns - (time.monotonic_ns() - sw.sched.now_ns())
        self._write_network_json()
        for h in self.hosts.values():
            assert h.proc.stdin is not None
            h.proc.stdin.write(f"start {self.t0_ns}\n")
            h.proc.stdin.flush()
        self._cpu.start({"switches": [sw.process.proc.pid for sw in self.switches.values()],
                         "hosts": [h.proc.pid for h in self.hosts.values()],
                         "link_emulators": [e.proc.pid for e in self.emulators.values()]})

    # ---- running ------------------------------------------------------------------------------------
    def now_ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def run_until(self, t_ns: int) -> None:
        """Sleep in real time until run time ``t_ns``, sampling and applying events on the way."""
        while True:
            nxt = min(self._next_sample, self._next_drops, self._events[0].at_ns if self._events else t_ns + 1)
            if nxt > t_ns:
                break
            self._sleep_until(nxt)
            self._lateness_ns.append(max(self.now_ns() - nxt, 0))
            while self._events and self._events[0].at_ns <= nxt:
                self._apply_event(self._events.pop(0))
            if self._next_sample == nxt:
                self._sample_links(nxt)
                if self.pacing is not None:
                    self.pacing.check()
                if not self._hop_by_hop:
                    self._sample_fifos(nxt)
                self._next_sample += SAMPLE_NS
            if self._next_drops == nxt:
                self._sample_drops(nxt)
                self._next_drops += DROP_SAMPLE_NS
            self._check_alive()
        self._sleep_until(t_ns)

    def _sleep_until(self, t_ns: int) -> None:
        left = (t_ns - self.now_ns()) / 1e9
        if left > 0:
            time.sleep(left)

    def _check_alive(self) -> None:
        for name, sw in self.switches.items():
            reader = getattr(sw.client, "_reader", None)
            if reader is not None and not reader.is_alive() and name not in self._stream_lost:
                self._stream_lost.add(name)
                self._notice(f"switch {name}: the agent's P4Runtime stream ended at {self.now_ns() / 1e9:.2f} s "
                             "(packet-ins no longer reach it)")
            if sw.process.proc.poll() is not None:
                raise NetnsError(f"switch {name} exited with status {sw.process.proc.returncode} during the run: "
                                 f"{sw.process.output()}")

    def _apply_event(self, ev: Event) -> None:
        """The switches' part of an event (hosts apply theirs themselves, on time)."""
        if ev.kind == "link_rate":
            self._set_link_rate(ev)
            return
        for u, v in ev.targets:
            if u in self.switches:
                sw = self.switches[u]
                sw.sched.run_sync(params_io.apply_law_changes, sw.client, self.topo.port(u, v),  # type: ignore
                                  dict(ev.law_changes))
            if ev.interval_us is not None and v in self.switches:
                sw = self.switches[v]
                sw.sched.run_sync(params_io.apply_port_changes, sw.client, self.topo.port(v, u),  # type: ignore
                                    {"interval_us": ev.interval_us})

    def _set_link_rate(self, ev: Event) -> None:
        """A link's new rate at both switch ends: p4switch's wire model through its control
        socket, BMv2's netem or link emulator (a host end is changed by the host process itself)."""
        assert ev.link is not None and ev.rate_bps is not None
        a, b = ev.link
        bps = round(ev.rate_bps)
        self._rates[(a, b) if (a, b) in self._rates else (b, a)] = bps
        if self.pacing is not None:  # BMv2's egress at the link's new rate
            self.pacing.set_link_rate((a, b) if (a, b) in self._rates else (b, a), bps)
        if self.link_mode == "linkemu":
            emu = self.emulator_specs.get((a, b)) or self.emulator_specs[(b, a)]
            try:  # its switch ends: both ways of a switch-switch link, the switch-to-host way of a host link
                control_call(emu.control_socket, "set_bitrate", bps=bps)
            except ControlError as exc:
                self._notice(f"{self.topo.source}:{ev.line}: link {a}-{b} rate change not applied by its link "
                             f"emulator ({exc})")
            return
        for u, v in ((a, b), (b, a)):
            sw = self.switches.get(u)
            if sw is None:
                continue
            port = self.topo.port(u, v)
            if self.target == "p4switch":
                control_call(sw.spec.control_socket, "set_port_bitrate", port=port, bps=bps)
                continue
            ifname = dict(sw.spec.interfaces)[port]
            proc = subprocess.run(netem_command(ifname, bps, sw.spec.delays[port]), capture_output=True, text=True,
                                  timeout=CMD_TIMEOUT_S)
            if proc.returncode != 0:
                self._notice(f"{self.topo.source}:{ev.line}: link {a}-{b} rate change not applied on BMv2 "
                             f"({proc.stderr.strip()})")

    def _sample_fifos(self, t_ns: int) -> None:
        """End-to-end mode: each output FIFO's occupancy, read through the control socket."""
        if self.target != "p4switch":
            if "fifo" not in self._said:
                self._said.add("fifo")
                self._notice("end-to-end mode on BMv2: output queue occupancy is not sampled (BMv2 exposes it "
                             "only to the data plane, as standard_metadata.enq_qdepth)")
            return
        for name, sw in self.switches.items():
            try:
                queues = {int(p): tuple(v) for p, v in control_call(sw.spec.control_socket, "queues").items()}
            except ControlError as exc:
                self._notice(f"switch {name}: queue occupancy unreadable at {t_ns / 1e9:.1f} s: {exc}")
                continue
            self.recorder.laws.extend(fifo_rows(self.topo, name, t_ns, queues))  # type: ignore[arg-type]

    def _sample_links(self, t_ns: int) -> None:
        for link in self.topo.links:
            for u, v in ((link.a, link.b), (link.b, link.a)):
                ifname, way = self._link_bytes[(u, v)]
                self.recorder.links.append(LinkSample(t_ns, u, v, _if_bytes(ifname, way),
                                                      self._rates[(link.a, link.b)]))

    def _sample_drops(self, t_ns: int) -> None:
        for name, sw in self.switches.items():
            ports = [p for p, _ in sw.spec.interfaces]
            try:
                cells = read_drop_counters(sw.client, ports)
            except Exception as exc:  # noqa: BLE001 - a switch that stopped answering: say so, keep running
                self._notice(f"switch {name}: drop counters unreadable at {t_ns / 1e9:.1f} s: {exc}")
                continue
            for reason, port, packets in cells:
                self.recorder.drops.append(DropSample(t_ns, name, port, reason, packets))
            if self.target == "p4switch":
                self._sample_egress_drops(t_ns, name, sw)

    def _switch_link_lost(self) -> int:
        """Reports the switches' wires lost (``--link-loss``), added to the hosts' own count."""
        total = 0
        for name, sw in self.switches.items():
            try:
                total += sum(control_call(sw.spec.control_socket, "link_lost").values())
            except ControlError as exc:
                self._notice(f"switch {name}: lost-report counters unreadable: {exc}")
        return total

    def _sample_egress_drops(self, t_ns: int, name: str, sw: _SwitchNode) -> None:
        """The traffic manager's tail drops, as the simulator records them (one row per switch)."""
        try:
            per_port = control_call(sw.spec.control_socket, "egress_drops")
        except ControlError as exc:
            self._notice(f"switch {name}: egress drop counters unreadable at {t_ns / 1e9:.1f} s: {exc}")
            return
        total = sum(per_port.values())
        if total:
            self.recorder.drops.append(DropSample(t_ns, name, 0, "egress_queue_full", total))

    # ---- the end ------------------------------------------------------------------------------------
    def summary_extra(self) -> dict[str, Any]:
        """The control latency the agents measured: a report's packet-in read by the agent's gRPC
        client until its set_queue_rate returned from the switch (applied), per report that
        changed a rate; and whether the run kept real time (topo/netns/keepup.py)."""
        realtime = keepup_summary(self._lateness_ns)
        if self._cpu.summary:
            realtime["cpu_cores"] = self._cpu.summary
        relays = {h.name: relay_summary(h.results["host_relay"]) for h in self.hosts.values()
                  if h.results and h.results.get("host_relay")}
        if relays:
            realtime["host_relays"] = relays
            realtime["kept_up"] = verdict(realtime) == "yes"
        pacing = {"link_backlog": self.pacing.summary()} if self.pacing is not None else {}
        return {**pacing, "control_latency": latency_summary(
            {name: sw.agent.control_latencies_ns for name, sw in self.switches.items() if sw.agent is not None}),
            "realtime": realtime}

    def finish(self) -> None:
        """Final samples, the hosts' results merged into the recorder."""
        end = max(self.now_ns(), self.duration_ns)
        self._cpu.stop()
        if self.pacing is not None:
            # The emulators' backlog as of the run's last sample (run_until's, at the duration): a reading
            # taken now would count the teardown, the hosts ending their run on the same cores as the
            # switches (at alinea-merge-2's end BMv2 sent nothing for 0.2 s, then 100 frames in 0.2 s,
            # and the R1-R2 emulator held 46-79 of them 0.65 s after the last sample; docs/howto/bmv2.md).
            hidden = hidden_queue_notice(self.pacing.summary())
            if hidden:
                self._notice(hidden)
        for sw in self.switches.values():  # the recorder is ours from here on
            if sw.sched is not None:
                sw.sched.run_sync(setattr, self, "_recording", False)
        self._sample_links(end)
        self._sample_drops(end)
        if self.topo.options.report_loss > 0:
            self.counts["reports_lost"] += self._switch_link_lost()
        deadline = time.monotonic() + 30
        for h in self.hosts.values():
            line = read_line(h.proc, deadline)
            if line != "done" or not h.out.exists():
                raise NetnsError(f"host {h.name} did not hand back its results (exit status {h.proc.poll()}); "
                                 f"see {self.run_dir / 'logs' / (h.name + '.log')}")
            h.results = pickle.loads(h.out.read_bytes())
        self._merge_hosts()

    def _merge_hosts(self) -> None:
        rec = self.recorder
        results = {h.name: h.results or {} for h in self.hosts.values()}
        flow_ids = self.topo.wire_ids()  # a multicast branch: its group's id, its receiver's record
        by_t: dict[str, dict[int, dict[str, Any]]] = {n: {s["t_ns"]: s for s in r.get("samples", [])}
                                                      for n, r in results.items()}
        times = sorted({t for samples in by_t.values() for t in samples})
        for t in times:
            for f in self.topo.flows:
                src, dst = by_t[f.src].get(t), by_t[f.dst].get(t)
                sent = src["sent"].get(self.topo.sender_name(f), 0) if src else 0
                received, owd = dst["received"].get(flow_ids[f.name], (0, 0)) if dst else (0, 0)
                played = dst.get("played") if dst and f.control != "tcp" else None
                rec.flows.append(FlowSample(t, f.name, sent, received, owd, f.packet_size,
                                            None if played is None else played.get(flow_ids[f.name], 0)))
            for name in sorted(by_t):
                s = by_t[name].get(t)
                if s is not None and s["buffer"] is not None:
                    rec.buffers.append(s["buffer"])
                if s is not None and s.get("read_ns", t) != t:
                    rec.read_ns[(name, t)] = s["read_ns"]
        for r in results.values():
            rec.laws.extend(r.get("laws", []))
            rec.packets.update(r.get("packets", {}))
            tcp = r.get("tcp", {})
            rec.tcp.extend(tcp.get("samples", []))
            for name, totals in tcp.get("flows", {}).items():
                rec.tcp_flows.setdefault(name, {}).update(totals)
            for name, stats in r.get("control_stats", {}).items():
                rec.control_stats.setdefault(name, {}).update(stats)
            last = {s["t_ns"]: s for s in r.get("samples", [])}  # the end's sample may repeat the last tick's
            rec.pgmcc.extend(row for s in last.values() for row in s.get("pgmcc", []))
            rec.pgmcc_switches.extend(r.get("pgmcc_switches", []))
            for k, v in r.get("counts", {}).items():
                self.counts[k] = self.counts.get(k, 0) + v
        rec.laws.sort(key=lambda row: row.t_ns)
        rec.pgmcc.sort(key=lambda row: row.t_ns)
        rec.pgmcc_switches.sort(key=lambda row: row.t_ns)

    def end_state(self) -> EndState:
        """What can be known of the network at the end (topo/net/invariants.py), for the invariants.

        The hosts took their last sample at the run's end, each in its own process; the switches'
        counters are read after it. So drops are counted (ingress counters, egress tail drops,
        receive buffers, full NIC queues), but what was still held when the hosts sampled is not:
        it is bounded instead (``held_is_bound``): an egress queue by its depth limit, a wire by
        what its rate fits in its delay and the sampling's lateness, a host's uplink also by its
        NIC queue (HOST_TX_QUEUE frames). Kernel TCP flows count records, not segments: they are
        left out of the per-flow conservation (flows.csv's received <= sent still holds)."""
        topo = self.topo
        late = max(self._lateness_ns, default=0) + LATE_READ_NS
        smallest = min((f.packet_size for f in topo.flows), default=64)
        places: dict[str, Place] = {place_tx(): Place(dropped=self.counts.get("host_tx_queue_full", 0))}
        for link in topo.links:
            fastest = max([link.rate_bps] + [ev.rate_bps or 0 for ev in topo.events if ev.kind == "link_rate"
                                              and ev.link is not None and set(ev.link) == {link.a, link.b}])
            wire = math.ceil(fastest * (link.delay_ns + late) / (8e9 * smallest)) + 1
            for u, v in ((link.a, link.b), (link.b, link.a)):
                nic = HOST_TX_QUEUE if u in self.hosts else 0
                places[place_link(u, v)] = Place(held=wire + nic, held_is_bound=True)
        final: dict[tuple[str, int, str], int] = {}
        for d in self.recorder.drops:
            final[(d.switch, d.port, d.reason)] = d.packets
        for name, sw in self.switches.items():
            try:
                queues = {int(p): tuple(v) for p, v in control_call(sw.spec.control_socket, "queues").items()} \
                    if self.target == "p4switch" else {}
                tail = {int(p): n for p, n in control_call(sw.spec.control_socket, "egress_drops").items()} \
                    if self.target == "p4switch" else {}
            except ControlError as exc:
                self._notice(f"switch {name}: queues unreadable at the end: {exc}")
                queues, tail = {}, {}
            for port, _ifname in sw.spec.interfaces:
                # BMv2 does not say its queues' depth: the largest modelled buffer stands for it
                limit = queues[port][1] if port in queues else max(pp.capacity for pp in topo.ports.values())
                places[place_egress(name, port)] = Place(dropped=tail.get(port, 0), held=limit, held_is_bound=True)
                places[place_in(name, port)] = Place(dropped=sum(n for (s, p, r), n in final.items()
                                                                 if s == name and p == port
                                                                 and r not in ("spoofed_report", "egress_queue_full")))
        for b in self.recorder.buffers:
            places[place_rx(b.host)] = Place(dropped=b.dropped, data_only=True)
        last = {s.flow: s for s in self.recorder.flows}
        flows = {f.name: FlowEnd(last[f.name].sent, last[f.name].received, "packets", flow_places(topo, f))
                 for f in topo.flows if f.control != "tcp" and f.name in last}
        delivered = {}
        for h in self.hosts.values():
            stats = (h.results or {}).get("port_stats")
            if stats is not None:
                delivered[(topo.neighbours(h.name)[0], h.name)] = stats.rx_frames
        return EndState("netns", flows, places, {}, receiver_overflow=None, max_frame_bytes=max_frame_bytes(topo),
                        sample_lateness_ns=late, link_delivered=delivered, link_delivered_exact=False)

    def packet_hops(self) -> int:
        """Frames carried by every link direction (from the interfaces' counters)."""
        total = 0
        for ifname, way in set(self._link_bytes.values()):
            total += _if_counter(ifname, f"{way}_packets")
        return total

    def close(self) -> None:
        """End every process, remove every namespace and interface (idempotent, never raises)."""
        if self._closed:
            return
        self._closed = True
        for name, sw in self.switches.items():
            if sw.agent is not None and sw.sched is not None:
                _teardown_step(f"switch {name}: agent stop", lambda sw=sw: sw.sched.run_sync(sw.agent.stop))
        for h in self.hosts.values():
            if h.proc.poll() is None:
                _teardown_step(f"host {h.name}: SIGTERM", h.proc.terminate)
        for name, sw in self.switches.items():
            if sw.sched is not None:
                _teardown_step(f"switch {name}: agent loop stop", sw.sched.stop)
        for name, sw in self.switches.items():
            for what, closer in (("P4Runtime client", sw.client), ("Thrift client", sw.queues)):
                if closer is not None:
                    _teardown_step(f"switch {name}: {what} close", closer.close)
            _teardown_step(f"switch {name}: process stop", sw.process.stop)
        for h in self.hosts.values():
            _teardown_step(f"host {h.name}: exit", lambda h=h: _end_process(h.proc))
        for emu in self.emulators.values():
            _teardown_step(f"link emulator {emu.spec.name}: stop", emu.stop)
        self.plumbing.close()
        with contextlib.suppress(Exception):
            clean(self.prefix)
        handler = getattr(self, "_log_handler", None)
        if handler is not None:
            logging.getLogger().removeHandler(handler)
            handler.close()  # anything that escaped (a host process that ignored SIGTERM)

    def __enter__(self) -> NetnsNetwork:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def netem_command(ifname: str, rate_bps: int, delay_ns: int) -> list[str]:
    """``tc`` emulating one direction of a link on ``ifname`` (BMv2 has no link model)."""
    return ["tc", "qdisc", "replace", "dev", ifname, "root", "netem", "delay", f"{delay_ns // 1000}us",
            "rate", f"{rate_bps}bit", "limit", "10000"]


def netem_missing(prefix: str) -> str | None:
    """None where ``tc netem`` works, else why not (tried once on a probe veth pair of the run)."""
    probe, peer = f"{prefix}nq", f"{prefix}nr"
    try:
        made = subprocess.run(["ip", "link", "add", probe, "type", "veth", "peer", "name", peer],
                              capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
        if made.returncode != 0:
            return f"no probe interface: {made.stderr.strip()}"
        proc = subprocess.run(netem_command(probe, 1_000_000, 1_000_000), capture_output=True, text=True,
                              timeout=CMD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        subprocess.run(["ip", "link", "del", probe], capture_output=True, timeout=CMD_TIMEOUT_S)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or [f"tc exit {proc.returncode}"])[0]


def _guarded(name: str, agent_box: list[SwitchAgent]) -> Callable[[Any], None]:
    """The agent's stream callback, logging (not raising) its errors: an exception would end
    the client's stream reader thread, and with it every later packet-in."""
    def on_message(msg: Any) -> None:
        try:
            if agent_box:  # the agent also takes the primary role back when there is none
                agent_box[0].on_stream_message(msg)
        except Exception:  # noqa: BLE001
            log.exception("%s: agent failed on a stream message", name)

    return on_message


def _if_counter(ifname: str, counter: str) -> int:
    try:
        return int(Path(f"/sys/class/net/{ifname}/statistics/{counter}").read_text())
    except (OSError, ValueError):
        return 0


def _if_bytes(ifname: str, way: str) -> int:
    return _if_counter(ifname, f"{way}_bytes")


#: a teardown step longer than this is logged: every step is bounded, but their sum is what a
#: user waits for after Ctrl-C
SLOW_TEARDOWN_S = 2.0


def _teardown_step(what: str, fn: Callable[[], Any]) -> None:
    """One step of :meth:`NetnsNetwork.close`: never raises (the teardown must reach its end),
    but a step that fails or takes long says so in the run's log (logs/agents.log), so a slow
    Ctrl-C can be explained afterwards."""
    start = time.monotonic()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - logged, and the teardown goes on
        log.warning("teardown: %s failed: %r", what, exc)
    took = time.monotonic() - start
    if took > SLOW_TEARDOWN_S:
        log.warning("teardown: %s took %.1f s", what, took)


def _end_process(proc: subprocess.Popen) -> None:
    """Wait for a process told to end (bounded); kill it when it does not."""
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        log.warning("teardown: pid %d ignored SIGTERM for 5 s; killed", proc.pid)
        proc.kill()
        proc.wait(5)


def latency_summary(samples: dict[str, list[int]]) -> dict[str, Any]:
    """Median and 99th percentile (ms) of every switch's control latencies, and all together."""
    def stats(values: list[int]) -> dict[str, Any]:
        if not values:
            return {"samples": 0}
        return {"samples": len(values), "median_ms": round(percentile(values, 0.5) / 1e6, 3),
                "p99_ms": round(percentile(values, 0.99) / 1e6, 3)}

    every = [x for values in samples.values() for x in values]
    return {"measured": "packet-in read by the agent -> set_queue_rate returned", **stats(every),
            "switches": {name: stats(values) for name, values in sorted(samples.items())}}

