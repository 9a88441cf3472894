//! The v1model architecture around the VM: a packet's walk through parser, ingress, traffic
//! manager, egress and deparser (`v1walk`), its copies (clone, resubmit, recirculate, multicast:
//! `v1copies`), the packet replication engine's state (`pre`) and the traffic manager with
//! BMv2's queue semantics (`tm`).

pub(crate) mod pre;
pub(crate) mod tm;
pub(crate) mod v1copies;
pub(crate) mod v1walk;
