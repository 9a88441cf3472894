"""What BMv2's Thrift table calls share with their mixins: the table error, an entry's match,
and what a modify keeps of an entry.

Why a module of its own: ``p4switch.thrift_tables.StandardTables`` joins the counter and meter
calls (``thrift_externs``) and the action-profile calls (``thrift_profiles``) as mixins; both
raise BMv2's table errors and modify entries as the table calls do. Here, below all three, the
mixins use them without importing the class that joins them.
"""

from __future__ import annotations

from typing import Any

from bm_runtime.standard import ttypes as T

Code = T.TableOperationErrorCode


def table_error(name: str) -> T.InvalidTableOperation:
    """BMv2's InvalidTableOperation with the code called ``name``."""
    return T.InvalidTableOperation(code=getattr(Code, name))


def match_of(t: Any, e: Any) -> dict[str, Any]:
    """The entry ``e`` of the table ``t``'s match, by field name, as ``TableState.modify`` takes it."""
    return {f.name: m for f, m in zip(t.fields, e.match) if m is not None}


def kept(e: Any) -> dict[str, Any]:
    """What a BMv2 modify leaves as it was (P4Runtime's MODIFY would reset some of it)."""
    meter = e.direct_meter.config if e.direct_meter is not None else None
    return {
        "controller_metadata": e.controller_metadata,
        "metadata": e.metadata,
        "idle_timeout_ns": e.idle_timeout_ns,
        "meter_config": meter,
    }


def kept_default(e: Any) -> dict[str, Any]:
    """What a BMv2 default-action modify leaves as it was."""
    meter = e.direct_meter.config if e.direct_meter is not None else None
    return {"controller_metadata": e.controller_metadata, "metadata": e.metadata, "meter_config": meter}
