"""Runtime state of a P4 pipeline, keyed by P4Info ids and names.

The pipeline reads it (table lookups, action profile members and groups, value
sets, counter and meter updates, PRE, digests); the P4Runtime server writes it.
See ``runtime.RuntimeState``.
"""

from .actions import ActionCall, ActionInfo, ParamInfo
from .digests import DigestBuffer, DigestConfig, DigestList
from .errors import Code, StateError
from .externs import (
    GREEN,
    RED,
    YELLOW,
    CounterArray,
    CounterCell,
    CounterUnit,
    MeterArray,
    MeterCell,
    MeterConfig,
    MeterType,
    MeterUnit,
    RegisterArray,
)
from .pre import CloneSession, MulticastGroup, PacketReplicationEngine, PreLimits, Replica
from .profiles import (
    ActionProfileInfo,
    ActionProfileState,
    ActionSet,
    Group,
    GroupRef,
    IndirectAction,
    Member,
    MemberRef,
    WeightedAction,
)
from .runtime import ControllerHeader, PacketMetadataField, RuntimeState
from .tables import (
    Exact,
    Lpm,
    Match,
    MatchKind,
    OptionalMatch,
    Range,
    TableEntry,
    TableInfo,
    TableState,
    Ternary,
)
from .value_sets import ValueSetState

__all__ = [
    "ActionCall", "ActionInfo", "ParamInfo", "DigestBuffer", "DigestConfig", "DigestList", "Code",
    "StateError", "GREEN", "YELLOW", "RED", "CounterArray", "CounterCell", "CounterUnit", "MeterArray",
    "MeterCell", "MeterConfig", "MeterType", "MeterUnit", "RegisterArray", "CloneSession", "MulticastGroup",
    "PacketReplicationEngine", "PreLimits", "Replica", "ControllerHeader", "PacketMetadataField",
    "RuntimeState", "Exact", "Lpm", "Match", "MatchKind", "OptionalMatch", "Range", "TableEntry",
    "TableInfo", "TableState", "Ternary", "ActionProfileInfo", "ActionProfileState", "ActionSet", "Group",
    "GroupRef", "IndirectAction", "Member", "MemberRef", "WeightedAction", "ValueSetState",
]
