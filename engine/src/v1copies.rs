//! The copies v1model's walk makes of a packet, as simple_switch makes them: a new packet as
//! received, a clone (I2E, E2E: re-parsed, metadata reset but a field list), a resubmitted
//! or recirculated packet (metadata reset but a field list, parsed again by ingress), a
//! multicast replica (everything copied).
//!
//! Why a module of its own: the rules of what a copy keeps are v1model's (the same as
//! p4switch/pipeline/pipeline.py's `new_packet` and `copy_*`, which the Python walk, the
//! differential oracle, uses); the walk (v1walk.rs) only decides when to make one.

use crate::frame::Frame;
use crate::p4vm::STATUS_REJECT;
use crate::v1walk::{WalkPacket, WalkProgram};
use pyo3::prelude::*;

/// standard_metadata.instance_type values (v1model.p4, simple_switch).
pub(crate) const PKT_INGRESS_CLONE: u64 = 1;
pub(crate) const PKT_EGRESS_CLONE: u64 = 2;
pub(crate) const PKT_RECIRC: u64 = 4;
pub(crate) const PKT_REPLICATION: u64 = 5;
pub(crate) const PKT_RESUBMIT: u64 = 6;

/// A packet that arrives on `ingress_port` as `data` at `now_us`, of instance type `itype`.
pub(crate) fn fresh(
    py: Python<'_>,
    prog: &Py<WalkProgram>,
    data: Frame,
    ingress_port: u64,
    itype: u64,
    now_us: i64,
) -> WalkPacket {
    let wp = prog.get();
    let s = &wp.slots;
    let mut phv = wp.template.clone();
    phv[s.ingress_port] = ingress_port & 0x1FF;
    phv[s.instance_type] = itype;
    phv[s.packet_length] = data.bytes(py).len() as u64;
    WalkPacket {
        prog: prog.clone_ref(py),
        phv,
        data,
        cursor: 0,
        truncate: None,
        now_us,
        egress_rid: 0,
        session_trunc: None,
        reentries: 0,
    }
}

/// `src`'s fields of `@field_list(field_list)` into `dst` (no such list: none).
pub(crate) fn preserve(wp: &WalkProgram, src: &[u64], dst: &mut [u64], field_list: i64) {
    if let Some(ranges) = wp.field_lists.get(&field_list) {
        for &(a, b) in ranges {
            dst[a..b].copy_from_slice(&src[a..b]);
        }
    }
}

/// The resubmitted (`data` as received) or recirculated (`data` as deparsed) packet: a new
/// packet on `ingress_port`, metadata reset but `field_list` of `src`; ingress parses it.
pub(crate) fn reentry(
    py: Python<'_>,
    src: &WalkPacket,
    data: Frame,
    ingress_port: u64,
    itype: u64,
    field_list: i64,
) -> WalkPacket {
    let mut new = fresh(py, &src.prog, data, ingress_port, itype, src.now_us);
    preserve(src.prog.get(), &src.phv, &mut new.phv, field_list);
    new.reentries = src.reentries;
    new
}

/// The clone of `src` (I2E: `data` as received; E2E: as deparsed after egress): re-parsed on
/// `src`'s ingress port, then metadata and standard_metadata reset to their initial values but
/// parser_error, `field_list` of `src`, instance_type and packet_length.
pub(crate) fn clone_of(
    py: Python<'_>,
    src: &WalkPacket,
    data: Frame,
    itype: u64,
    field_list: i64,
    now_us: i64,
) -> PyResult<WalkPacket> {
    let wp = src.prog.get();
    let s = &wp.slots;
    let mut new = fresh(py, &src.prog, data, src.phv[s.ingress_port], itype, now_us);
    let (status, cursor, _) = {
        let mut prog = wp.program.bind(py).borrow_mut();
        let data = new.data.bytes(py);
        prog.run_owned(
            py,
            &wp.ingress[..1],
            &mut new.phv,
            Some(data),
            s.parser_error,
        )?
    };
    if status < STATUS_REJECT {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "parser (engine): unknown status {status}"
        )));
    }
    new.cursor = cursor;
    let perr = s.parser_error.map(|e| (e as usize, new.phv[e as usize]));
    for &(a, b) in &wp.reset {
        new.phv[a..b].copy_from_slice(&wp.template[a..b]);
    }
    if let Some((slot, v)) = perr {
        new.phv[slot] = v;
    }
    preserve(wp, &src.phv, &mut new.phv, field_list);
    new.phv[s.instance_type] = itype;
    new.phv[s.packet_length] = new.data.bytes(py).len() as u64;
    Ok(new)
}

/// A multicast replica of `src` (everything copied; the walk sets its `egress_rid`).
pub(crate) fn replica(py: Python<'_>, src: &WalkPacket, egress_rid: u64) -> WalkPacket {
    WalkPacket {
        prog: src.prog.clone_ref(py),
        phv: src.phv.clone(),
        data: src.data.clone_ref(py),
        cursor: src.cursor,
        truncate: src.truncate,
        now_us: src.now_us,
        egress_rid,
        session_trunc: None,
        reentries: src.reentries,
    }
}
