"""The sweep's command-line grammar: ``--set``, ``--controls`` and ``--seeds`` (docs/howto/sweeps.md).

Why parsed apart from the topology: a mistake in the grammar itself (unknown section or key, an
empty value list, a bad seed range) is found before any file is read; whether a value is valid
for the topology is the loader's job (:mod:`topo.file.points`), so the two never disagree.

    SETTING  := TARGET "." KEY "=" VALUE ("," VALUE)*
    TARGET   := "alinea" ["[" SEL ("," SEL)* "]"]    SEL := ("node" | "toward") "=" NAME
              | "link" ["[" NAME "-" NAME "]"]     (also "[" NAME "," NAME "]")
              | "flow" ["[" NAME "]"]
              | "node" "[" NAME "]"
              | "options"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SweepError", "Setting", "parse_setting", "parse_settings", "parse_controls", "split_control",
           "parse_seeds", "TARGET_KEYS"]


class SweepError(ValueError):
    """A sweep's definition is wrong; the message is one line naming the option and value."""


#: The keys each target may set (the topology file's names, docs/reference/topologies.md).
TARGET_KEYS: dict[str, tuple[str, ...]] = {
    "alinea": ("o_min", "o_max", "w_max", "w_min", "k_p", "r_floor", "r_max", "interval"),
    "link": ("rate", "delay", "buffer"),
    "flow": ("start", "stop", "packet_size", "r_max", "rate"),
    "node": ("receive_buffer", "playout"),
    "options": ("report_loss",),
}
#: Targets that take a selector in brackets: "optional" or "required".
_SELECTOR = {"alinea": "optional", "link": "optional", "flow": "optional", "node": "required", "options": "none"}

_SETTING_RE = re.compile(r"(?P<target>[a-z_]+)(?:\[(?P<sel>[^\]]*)\])?\.(?P<key>[A-Za-z_]+)=(?P<values>.*)")
_ALINEA_SEL_RE = re.compile(r"(node|toward)=([A-Za-z][A-Za-z0-9_-]*)")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Setting:
    """One ``--set``: which part of the topology, which key, and the values to sweep."""

    text: str  # as given, for messages
    target: str  # alinea, link, flow, node, options
    selector: tuple[tuple[str, str], ...]  # alinea: (("node", "R1"),); link: (("ends", "R3-R4"),); flow/node: (("name", X),)
    key: str
    values: tuple[str, ...]
    name: str  # the parameter's name in runs.csv and sweep.md: the text left of "=V1,..."

    def assignment(self, value: str) -> str:
        return f"{self.name}={value}"


def parse_setting(text: str) -> Setting:
    """One ``--set`` argument; SweepError names it when it does not follow the grammar."""
    m = _SETTING_RE.fullmatch(text.strip())
    if m is None:
        raise SweepError(f"--set {text!r}: expected TARGET.KEY=V1,V2,... (e.g. alinea.o_max=0.7,0.9; "
                         f"targets: {', '.join(TARGET_KEYS)})")
    target, key = m["target"], m["key"]
    if target not in TARGET_KEYS:
        raise SweepError(f"--set {text!r}: unknown target {target!r} (known: {', '.join(TARGET_KEYS)})")
    if key not in TARGET_KEYS[target]:
        raise SweepError(f"--set {text!r}: unknown parameter {target}.{key} "
                         f"(known for {target}: {', '.join(TARGET_KEYS[target])})")
    selector = _selector(text, target, m["sel"])
    values = tuple(v.strip() for v in m["values"].split(","))
    if not values or any(v == "" for v in values):
        raise SweepError(f"--set {text!r}: an empty value (give V1,V2,... with no empty entries)")
    if len(set(values)) != len(values):
        raise SweepError(f"--set {text!r}: a value is listed twice")
    name = f"{target}[{m['sel'].replace(' ', '')}].{key}" if m["sel"] is not None else f"{target}.{key}"
    return Setting(text.strip(), target, selector, key, values, name)


def _selector(text: str, target: str, sel: str | None) -> tuple[tuple[str, str], ...]:
    kind = _SELECTOR[target]
    if sel is None:
        if kind == "required":
            raise SweepError(f"--set {text!r}: {target} needs a name in brackets, e.g. {target}[H2].KEY=...")
        return ()
    if kind == "none":
        raise SweepError(f"--set {text!r}: {target} takes no selector in brackets")
    if target == "alinea":
        parts = [p.strip() for p in sel.split(",")]
        pairs = [_ALINEA_SEL_RE.fullmatch(p) for p in parts]
        if not parts or any(p is None for p in pairs):
            raise SweepError(f"--set {text!r}: alinea[...] takes node=NAME and/or toward=NAME")
        out = tuple((p[1], p[2]) for p in pairs if p is not None)
        if len({k for k, _ in out}) != len(out):
            raise SweepError(f"--set {text!r}: alinea[...] names node or toward twice")
        return out
    if target == "link":
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*[-,][A-Za-z][A-Za-z0-9_-]*", sel.replace(" ", "")):
            raise SweepError(f"--set {text!r}: link[...] takes the two ends, e.g. link[R1-R2]")
        return (("ends", sel.replace(" ", "")),)
    if not _NAME_RE.fullmatch(sel.strip()):
        raise SweepError(f"--set {text!r}: {target}[...] takes one name, got {sel!r}")
    return (("name", sel.strip()),)


def parse_settings(texts: list[str]) -> list[Setting]:
    settings = [parse_setting(t) for t in texts]
    seen: dict[str, str] = {}
    for s in settings:
        if s.name in seen:
            raise SweepError(f"--set {s.text!r}: {s.name} is already swept by --set {seen[s.name]!r}")
        seen[s.name] = s.text
    return settings


def split_control(name: str) -> tuple[str, str | None]:
    """``tcp-cubic`` -> ("tcp", "cubic"): a TCP flow and its congestion control; any other name -> (name, None).

    Why in the name: a comparison's only axis is the control, and TCP needs its congestion control
    chosen with it; whether the cc exists is the loader's question (the kernel's list, the model's)."""
    if name.startswith("tcp-") and len(name) > 4:
        return "tcp", name[4:]
    return name, None


def parse_controls(text: str | None, known: tuple[str, ...]) -> tuple[str, ...] | None:
    """``--controls a,b``: None when not given (every flow keeps its file's control); ``tcp-CC`` names a
    TCP flow with congestion control CC when ``tcp`` is known."""
    if text is None:
        return None
    names = tuple(c.strip() for c in text.split(","))
    for name in names:
        if split_control(name)[0] not in known:
            raise SweepError(f"--controls {text!r}: unknown control {name!r} (known: {', '.join(known)}"
                             f"{'; tcp-CC for TCP with congestion control CC' if 'tcp' in known else ''})")
    if len(set(names)) != len(names):
        raise SweepError(f"--controls {text!r}: a control is listed twice")
    return names


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds 1-10`` or ``1,2,5`` or ``3-4,9``: distinct seeds, in the order given."""
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if m is None:
            raise SweepError(f"--seeds {text!r}: expected N, N-M or a comma list of those (e.g. 1-10)")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo:
            raise SweepError(f"--seeds {text!r}: range {lo}-{hi} runs backwards")
        if hi - lo >= 100_000:
            raise SweepError(f"--seeds {text!r}: more than 100000 seeds in one range")
        seeds += range(lo, hi + 1)
    if len(set(seeds)) != len(seeds):
        raise SweepError(f"--seeds {text!r}: a seed is listed twice")
    return tuple(seeds)
