//! The copies v1model's walk makes of a packet, as simple_switch makes them: a new packet as
//! received, a clone (I2E, E2E: re-parsed, metadata reset but a field list), a resubmitted
//! or recirculated packet (metadata reset but a field list, parsed again by ingress), a
//! multicast replica (everything copied).
//!
//! Why a module of its own: the rules of what a copy keeps are v1model's (the same as
//! p4switch/pipeline/pipeline.py's `new_packet` and `copy_*`, which the Python walk, the
//! differential oracle, uses); the walk (v1walk.rs) only decides when to make one. The packet
//! (`WalkPacket`) and the program it runs (`WalkProgram`) are here too, below the TM that
//! queues the packet and the walk that moves it.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};

use crate::frame::Frame;
use crate::p4vm::{P4Program, STATUS_REJECT};
use crate::pre::Pre;
use crate::prefetch;

/// standard_metadata.instance_type values (v1model.p4, simple_switch).
pub(crate) const PKT_INGRESS_CLONE: u64 = 1;
pub(crate) const PKT_EGRESS_CLONE: u64 = 2;
pub(crate) const PKT_RECIRC: u64 = 4;
pub(crate) const PKT_REPLICATION: u64 = 5;
pub(crate) const PKT_RESUBMIT: u64 = 6;

/// The standard_metadata slots the walk reads and writes, and the masks of the egress ones.
pub(crate) struct Slots {
    pub(crate) ingress_port: usize,
    pub(crate) instance_type: usize,
    pub(crate) packet_length: usize,
    pub(crate) egress_spec: usize,
    pub(crate) igts: Option<usize>,
    pub(crate) parser_error: Option<u32>,
    pub(crate) mcast_grp: Option<usize>,
    pub(crate) priority: Option<usize>,
    /// egress_port, egress_global_timestamp, enq_timestamp, enq_qdepth, deq_timedelta,
    /// deq_qdepth, egress_rid: (slot, mask), None when the program's struct lacks it.
    pub(crate) egress: [Option<(usize, u64)>; 7],
}

/// One loaded pipeline as the walk runs it (`V1Pipeline.walk_form()`).
#[pyclass(module = "hbh_engine", frozen)]
pub struct WalkProgram {
    pipeline: PyObject,
    pub(crate) program: Py<P4Program>,
    pub(crate) ingress: Vec<usize>,
    pub(crate) egress: Vec<usize>,
    pub(crate) template: Vec<u64>,
    /// The PHV's slots in `template` (the program's temporaries follow them).
    pub(crate) nslots: usize,
    pub(crate) slots: Slots,
    /// The PRE's sessions and groups (the runtime state's copy for the engine).
    pub(crate) pre: Py<Pre>,
    /// The PHV ranges of the user metadata and of standard_metadata (reset in a copy).
    pub(crate) reset: [(usize, usize); 2],
    /// `@field_list` id -> the PHV ranges of its fields.
    pub(crate) field_lists: HashMap<i64, Vec<(usize, usize)>>,
}

#[pymethods]
impl WalkProgram {
    /// `ingress`/`egress`: the block indexes of each half (`run_seq`'s); `template`: the initial
    /// PHV (every slot an int); `std`: the slots of ingress_port, instance_type, packet_length,
    /// egress_spec, ingress_global_timestamp, parser_error, mcast_grp, priority (-1: absent);
    /// `egress_fields`: (slot or -1, mask) of the seven fields egress gets from the TM;
    /// `pre`: the PRE's copy; `reset`: the (start, end) PHV ranges of the user metadata and
    /// standard_metadata, which a copy resets; `field_lists`: (id, its fields' ranges).
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        pipeline: PyObject,
        program: Py<P4Program>,
        ingress: Vec<usize>,
        egress: Vec<usize>,
        template: Vec<u64>,
        std: [i64; 8],
        egress_fields: [(i64, u64); 7],
        pre: Py<Pre>,
        reset: [(usize, usize); 2],
        field_lists: Vec<(i64, Vec<(usize, usize)>)>,
    ) -> PyResult<Self> {
        let opt = |v: i64| (v >= 0).then_some(v as usize);
        let need = |v: i64, what: &str| {
            opt(v).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "WalkProgram: standard_metadata has no {what}"
                ))
            })
        };
        let slots = Slots {
            ingress_port: need(std[0], "ingress_port")?,
            instance_type: need(std[1], "instance_type")?,
            packet_length: need(std[2], "packet_length")?,
            egress_spec: need(std[3], "egress_spec")?,
            igts: opt(std[4]),
            parser_error: opt(std[5]).map(|s| s as u32),
            mcast_grp: opt(std[6]),
            priority: opt(std[7]),
            egress: egress_fields.map(|(s, m)| opt(s).map(|s| (s, m))),
        };
        let n = template.len();
        let ranges = reset
            .iter()
            .chain(field_lists.iter().flat_map(|(_, r)| r.iter()));
        if ingress.is_empty() || ranges.into_iter().any(|&(a, b)| a > b || b > n) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "WalkProgram: no parser, or a metadata range past the PHV",
            ));
        }
        let all = [
            slots.ingress_port,
            slots.instance_type,
            slots.packet_length,
            slots.egress_spec,
        ];
        let optional = [
            slots.igts,
            slots.mcast_grp,
            slots.priority,
            slots.parser_error.map(|s| s as usize),
        ];
        if all.iter().chain(optional.iter().flatten()).any(|&s| s >= n)
            || slots.egress.iter().flatten().any(|&(s, _)| s >= n)
        {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "WalkProgram: a standard_metadata slot past the PHV",
            ));
        }
        // A packet's PHV is a whole register file of the program (its temporaries after the
        // slots, zero here): the program's runs swap it in and out (P4Program::run_owned).
        let (nslots, nregs) = {
            let p = program.bind(py).borrow();
            (p.nslots(), p.nregs())
        };
        let mut template = template;
        if n == nslots {
            template.resize(nregs, 0);
        }
        Ok(WalkProgram {
            pipeline,
            program,
            ingress,
            egress,
            template,
            nslots: n,
            slots,
            pre,
            reset,
            field_lists: field_lists.into_iter().collect(),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.pipeline)?;
        visit.call(&self.program)?;
        visit.call(&self.pre)
    }
}

/// A packet on the engine's walk: its PHV, the bytes it arrived with, where the payload starts,
/// and what its copy in the TM carries (the replica's `egress_rid`, the clone session's
/// truncation).
#[pyclass(module = "hbh_engine")]
pub struct WalkPacket {
    pub(crate) prog: Py<WalkProgram>,
    pub(crate) phv: Vec<u64>,
    pub(crate) data: Frame,
    pub(crate) cursor: u64,
    pub(crate) truncate: Option<u64>,
    pub(crate) now_us: i64,
    pub(crate) egress_rid: u64,
    pub(crate) session_trunc: Option<u64>,
    /// Resubmits and recirculations in its chain so far (the core's `max_reentries`).
    pub(crate) reentries: u32,
}

impl WalkPacket {
    /// Ask for what its egress reads first: the PHV, and the headers of an engine buffer.
    pub(crate) fn prefetch(&self) {
        // the slots (the temporaries after them are written before they are read)
        let n = self.phv.len().min(self.prog.get().nslots);
        prefetch::lines(self.phv.as_ptr(), n * 8);
        self.data.prefetch();
    }

    pub(crate) fn payload_offset(&self, py: Python<'_>) -> usize {
        let n = self.data.bytes(py).len();
        n.min(((self.cursor + 7) >> 3) as usize)
    }
}

impl WalkPacket {
    /// The Python objects it holds, for the collector of whatever holds it.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.prog)?;
        self.data.traverse(visit)
    }
}

#[pymethods]
impl WalkPacket {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.traverse(&visit)
    }
}

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
