"""The v1model pipeline: a compiler from the checked P4 IR to Python closures, and the
per-packet steps of BMv2's simple_switch around them.

Why closures: interpreting the AST per packet would walk hundreds of nodes and dispatch on
their kinds every time. Instead every name is resolved to a slot index, every operator to a
specialised closure, every header to a generated extractor/emitter -- ONCE, when the program
is loaded -- and a packet only runs Python calls over a list of ints.

Design
======

* **PHV** (``layout.py``): per packet one flat Python ``list``; every header field,
  metadata and ``standard_metadata`` field, local variable and parameter has a fixed slot,
  plus a validity slot per header instance and a ``nextIndex`` slot per header stack.
  Aggregates are flattened depth-first, so each occupies a contiguous slot range (copy =
  one slice assignment). Stacks have equal element strides (``stack[i]`` = element 0's
  slot + ``i * stride``). The first four slots hold the packet context (the Packet while
  a block runs, the received bytes, the parser cursor in bits, the deparser output) so that
  every closure takes a single argument. A packet's PHV is ``template[:]``.
* **Values** (``exprs.py``): ``bit<w>`` are ints in ``[0, 2**w)``; ``int<w>`` are held
  *signed* (wrap with ``((x + h) & m) - h``); ``bool`` is a Python bool (0/1 in slots is
  equivalent); ``error`` members are numbered in declaration order (``NoError`` = 0, core
  errors first; names in ``V1Pipeline.error_names``); plain enum members by position,
  serializable enums by value.
* **Expressions** compile to ``E`` (constant, slot, or closure); operators render a
  one-line template per operand *shape* into a cached closure factory (``templates.py``),
  so ``hdr.ipv4.ttl - 1`` is one closure, constants are folded, ``bit<w>`` results are
  masked, ``int<w>`` results wrapped, ``|+|``/``|-|`` saturate, ``<<`` by >= w gives 0.
* **Statements** compile to closures ``f(phv)``; blocks to one closure calling them in
  order. ``exit`` and ``return`` raise (``ExitSignal``/``ReturnSignal``): free on the
  straight path. Actions, functions and sub-blocks use copy-in/copy-out through their own
  parameter slots, and the copy-out also runs when ``exit`` leaves the call; a table writes
  the entry's action data into the action's contiguous data-parameter slots, and copies the
  directional arguments its action list binds (``setbyte(hdr.x)``) in and out around it.
  The index of a stack element on the left of ``=`` is evaluated before the right side,
  and only once in a compound assignment (``a[i()] += b``, written by the front end as
  ``a[i()] = a[i()] + b``). ``for``/``for-in`` loops are closures looping in Python;
  ``break``/``continue`` raise (``LoopSignal``), caught by the innermost loop.
* **Parser** (``parser.py``, ``packetio.py``): states are closures returning the next
  state; ``select`` on constant keysets is a dict lookup, otherwise ordered (value, mask) /
  range / value-set tests. ``extract`` of a fixed header is one ``int.from_bytes`` and a
  precomputed shift/mask store per field; varbit extract (also into stack elements; a size
  that is not whole bytes is ``ParserInvalidArgument``), ``extract<T>(_)`` (skips a ``T``),
  ``lookahead<T>`` and ``lookahead<T>().field``, ``advance``, ``verify``, stack
  ``.next``/``.last`` are supported. A header field of struct type is its fields in order. A parser error sets
  ``standard_metadata.parser_error`` and the packet continues into ingress (BMv2); the
  headers extracted so far stay valid; the bytes after the cursor are the payload.
* **Deparser**: ``emit`` of valid headers with precomputed packing, then the payload.
* **Tables** (``tables.py``): key tuple (P4Info field order; ``selector`` keys excluded),
  ``RuntimeState`` lookup, default entry on a miss, direct counter/meter on a hit, action
  dispatch by P4Info id. ``const entries`` (and a default action P4Info leaves unset) are
  installed into the state at load time; their priorities follow p4c's BMv2 back end
  (entry *i* is *i + 1* or its ``@priority(N)``, smallest wins; turned into P4Runtime's
  larger-wins order). Indirect tables (``implementation =
  action_profile(N)`` / ``action_selector(algo, N, W)``, a constructor call or an
  instance) run the member their entry names; for a group or a one-shot set the
  ``selector`` key fields (concatenated MSB first, in key order) are hashed with the
  selector's algorithm, cut to ``W`` bits, and the state's ``ActionProfileState.choose``
  picks the member (hash modulo the sum of weights over the members in group order:
  BMv2's ``hash % group_size`` when all weights are 1). An empty group is a miss.
* **Externs** (``externs.py``): register, counter, meter, direct_counter, direct_meter,
  hash (``base + h % max``, base when max is 0), checksums (csum16, crc16, crc32, xor16,
  identity, random; ``*_with_payload`` over the unparsed payload), random, digest (into
  the state's ``DigestBuffer`` at the call, and recorded in ``Packet.digests``),
  mark_to_drop (egress_spec = 511, mcast_grp = 0), log_msg (``p4switch.pipeline``
  logger and ``Packet.logs``), assert/assume (logged, counted in
  ``Packet.assert_failures``), and the architecture requests below, which are only
  *recorded* on the packet. Externs the P4Info does not list get private state.

* **Engine form** (``emitter.py``): after the closures are built, every block the emitter
  translates is also emitted as register-machine code for ``hbh_engine.P4Program``
  (engine/src/p4/p4vm.rs) and runs there; a control statement it does not translate runs
  through its own closure from the engine, a parser or deparser it does not translate runs
  on its closures (one log line each). ``oracle=True`` / ``HBH_P4_ORACLE=1``: the closures
  only (the differential oracle). docs/background/engine.md has the state of the port.

API for the architecture (switch) layer
=======================================

``load_pipeline(checked, p4info, state, *, seed=None, oracle=None) -> V1Pipeline``
    ``checked``: the front end's ``CheckedProgram`` (or its ``ast.Program``); ``state``:
    ``RuntimeState.from_p4info(p4info)``. Raises ``PipelineError`` (a located
    ``P4Error``) for what it cannot run. ``seed`` seeds ``random``/``HashAlgorithm.random``.

``V1Pipeline``
    * ``new_packet(data, ingress_port, now_us, instance_type=0) -> Packet`` (sets
      ingress_port, instance_type, packet_length);
    * ``run_ingress(pkt)``: parser, verify-checksum, ingress; sets
      ``ingress_global_timestamp = now_us``;
    * ``run_egress(pkt, egress_port, now_us, enq_timestamp=0, enq_qdepth=0,
      deq_timedelta=0, deq_qdepth=0, egress_rid=0)``: egress and compute-checksum; sets
      those fields and ``egress_global_timestamp``; clears ``clone_request`` and
      ``recirculate`` first (so afterwards they are egress's requests);
    * ``deparse(pkt) -> bytes``: emitted headers + payload; truncation is the caller's;
    * ``parse(pkt)``: the parser alone;
    * ``copy_for_clone(pkt, kind="I2E"|"E2E", field_list_id=None, *, slots=None,
      now_us=None) -> Packet``: I2E = the original bytes re-parsed, E2E = the frame as
      deparsed now; user and standard metadata reset except the field list (values at the
      end of the block; a list no field is annotated with is empty, as in BMv2),
      instance_type 1/2, packet_length; ``copy_for_request(pkt, req,
      now_us=None)`` does it for a ``CloneRequest``;
    * ``copy_for_resubmit(pkt, now_us=None)`` (original bytes, instance_type 6, same
      ingress_port, ``pkt.resubmit``'s field list; run_ingress parses it) and
      ``copy_for_recirculate(pkt, now_us=None)`` (deparsed frame, instance_type 4);
    * ``copy_packet(pkt) -> Packet``: an independent copy (multicast replicas);
    * ``std_slots``/``std_masks`` (standard_metadata fields), ``value_sets`` (parser value
      sets by P4Info name: ``.add(value | (value, mask), ...)``, ``.clear()``; backed by
      the state's ``ValueSetState`` that P4Runtime writes, so a mask is refused (ValueError)
      on a field the P4Info makes exact; sets the P4Info lacks get private ternary state),
      ``field_lists``, ``error_names``/``error_name(code)``, ``controller_headers``,
      ``table(name)``, ``state``.

``Packet``
    ``std(name)``/``set_std(name, value)``, ``marked_to_drop`` (egress_spec == 511),
    ``clone_request: CloneRequest | None`` (kind "I2E"/"E2E", session, field_list,
    slots; the last clone call of a block wins), ``resubmit``/``recirculate``:
    ``PreserveRequest | None``, ``truncate_len: int | None`` (smallest truncate() length),
    ``digests: list[(digest_id, value)]``, ``data``, ``payload``, ``now_us``, ``logs``,
    ``get(path)``/``set(path, v)``/``is_valid(path)`` by paths from the parser's parameter
    names (``"hdr.ipv4.ttl"``, ``"meta.x"``, ``"standard_metadata.egress_spec"``).

Packet-in/out need nothing here: a packet-out enters ingress on the CPU port with its
``@controller_header("packet_out")`` header in front; a packet-in is the deparsed frame
sent to the CPU port, ``packet_in`` header first.

Errors while running a packet (a pipeline bug, or a header stack index out of bounds
outside the parser) raise ``PipelineRuntimeError`` naming the block; bad input frames
never raise (they become parser errors).
"""

from .packet import DROP_PORT, CloneRequest, Packet, PreserveRequest
from .pipeline import PipelineRuntimeError, V1Pipeline, load_pipeline, take_requests
from .scope import PipelineError, ValueSet

__all__ = ["load_pipeline", "take_requests", "V1Pipeline", "Packet", "CloneRequest", "PreserveRequest", "PipelineError",
           "PipelineRuntimeError", "ValueSet", "DROP_PORT"]
