"""Shared helpers for the pipeline tests: load a program, run a frame through it."""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from p4switch.frontend.p4info import build_p4info
from p4switch.frontend.passes import compile_file
from p4switch.pipeline import Packet, V1Pipeline, load_pipeline
from p4switch.state import RuntimeState

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = [str(ROOT / "p4src" / "include")]
ALINEA = ROOT / "p4src" / "alinea.p4"
PROGRAMS = ROOT / "tests" / "p4programs"


@dataclass
class Loaded:
    pipeline: V1Pipeline
    state: RuntimeState

    def action_id(self, name: str) -> int:
        return self.state.actions_by_name[name].id

    def table(self, name: str):  # -> TableState
        return self.state.tables_by_name[name]


@functools.lru_cache(maxsize=16)
def compiled(path: str, defines: tuple[str, ...]):
    checked = compile_file(path, INCLUDE, defines)
    return checked, build_p4info(checked)


def load(path: str | Path, defines: tuple[str, ...] = (), seed: int = 1) -> Loaded:
    """A fresh pipeline and state for a program (compiled once per test session)."""
    checked, info = compiled(str(path), defines)
    state = RuntimeState.from_p4info(info)
    return Loaded(load_pipeline(checked, info, state, seed=seed), state)


def load_source(source: str, seed: int = 1) -> Loaded:
    """A pipeline for P4 source text (written to a temporary file)."""
    with tempfile.NamedTemporaryFile("w", suffix=".p4", delete=False) as f:
        f.write(source)
    return load(f.name, seed=seed)


def ingress(loaded: Loaded, frame: bytes, port: int, now_us: int = 1000, instance_type: int = 0) -> Packet:
    pkt = loaded.pipeline.new_packet(frame, port, now_us, instance_type)
    loaded.pipeline.run_ingress(pkt)
    return pkt


def through(loaded: Loaded, frame: bytes, port: int, now_us: int = 1000) -> tuple[Packet, bytes | None]:
    """Ingress, then (unless dropped) egress on egress_spec and deparse."""
    pkt = ingress(loaded, frame, port, now_us)
    if pkt.marked_to_drop:
        return pkt, None
    loaded.pipeline.run_egress(pkt, pkt.std("egress_spec"), now_us + 10)
    if pkt.marked_to_drop:
        return pkt, None
    return pkt, loaded.pipeline.deparse(pkt)
