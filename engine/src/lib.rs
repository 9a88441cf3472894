//! hbh's compiled engine: the per-packet path of the simulator and of p4switch.
//!
//! Why one crate: issue 22 moves every per-packet step out of Python, one layer at a time, from
//! the bottom up: the event heap and virtual-time loop (`sched`), links (`link`), the traffic
//! manager (`tm`) and hosts' paced senders (`host`) first. The Python modules that held them
//! (runtime/sched.py, runtime/link.py, p4switch/tm.py, hosts/sender.py's `Pacer`) keep their API
//! as thin wrappers, so there is one engine, not two copies.

use pyo3::prelude::*;

// The modules live in a folder per concept (docs/background/engine.md, "The crate's folders");
// each is also named at the root, so a path reads `crate::sched`, whatever folder holds it.
mod analysis;
mod hosts;
mod net;
mod p4;
mod p4rt;
mod realtime;
mod v1model;
mod wire;

use analysis::{fluid, fluid_loop};
use hosts::{host, hostrecv, hostrelay};
use net::{channel, link, linkport, sched};
use p4::{p4cells, p4fuse, p4ins, p4tables, p4vm};
use p4rt::{p4rtfront, p4rtnative, p4rtread, p4rtwrite};
use realtime::{afpacket, rtloop, txport};
use v1model::{pre, tm, v1copies, v1walk};
use wire::{ctrlheader, datagram, frame, prefetch};

#[pymodule]
fn hbh_engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<sched::TimerHandle>()?;
    m.add_class::<fluid::FluidPlant>()?;
    m.add_class::<sched::EventHeap>()?;
    m.add_class::<sched::VirtualScheduler>()?;
    m.add_class::<channel::FifoDelay>()?;
    m.add_class::<channel::DelayedCalls>()?;
    m.add_class::<link::Transmitter>()?;
    m.add_class::<link::LinkStats>()?;
    m.add_class::<link::InMemoryLink>()?;
    m.add_class::<ctrlheader::HeaderSplit>()?;
    m.add_class::<linkport::LinkPort>()?;
    m.add_function(wrap_pyfunction!(sched::spin_until, m)?)?;
    m.add_function(wrap_pyfunction!(link::wire_bits, m)?)?;
    m.add_function(wrap_pyfunction!(link::wire_time_ns, m)?)?;
    m.add_class::<host::PacedSender>()?;
    m.add_class::<host::FlowRecord>()?;
    m.add_class::<host::PlayoutBuffer>()?;
    m.add_class::<hostrecv::HostReceiver>()?;
    m.add_class::<hostrecv::HostReporter>()?;
    m.add_class::<hostrelay::HostRelay>()?;
    m.add("HOST_RELAY_TO_PYTHON_MAX", hostrelay::TO_PYTHON_MAX)?;
    m.add("REALTIME_DATE_BACK_MAX_NS", txport::DATE_BACK_MAX_NS)?;
    m.add_class::<datagram::Datagram>()?;
    m.add_function(wrap_pyfunction!(datagram::parse_datagram, m)?)?;
    m.add_function(wrap_pyfunction!(datagram::write_datagram_header, m)?)?;
    m.add(
        "DatagramError",
        m.py().get_type::<datagram::DatagramError>(),
    )?;
    m.add("DATAGRAM_MAGIC", datagram::MAGIC)?;
    m.add("DATAGRAM_VERSION", datagram::VERSION)?;
    m.add("DATAGRAM_OFFSET", datagram::OFFSET)?;
    m.add("DATAGRAM_HEADER_BYTES", datagram::HEADER_BYTES)?;
    m.add_class::<tm::TMItem>()?;
    m.add_class::<tm::PortStats>()?;
    m.add_class::<tm::TrafficManager>()?;
    m.add_function(wrap_pyfunction!(tm::bmv2_interval_ns, m)?)?;
    m.add_class::<p4vm::P4Program>()?;
    m.add_class::<p4rtfront::P4RuntimeFront>()?;
    m.add_class::<p4rtfront::StreamSender>()?;
    m.add_class::<p4rtwrite::TableWritePlan>()?;
    m.add_class::<p4rtread::TableEntityWriter>()?;
    m.add_class::<p4rtwrite::DecodedWrite>()?;
    m.add_class::<p4cells::Cells>()?;
    m.add_class::<pre::Pre>()?;
    m.add_class::<v1walk::V1Walk>()?;
    m.add_class::<v1copies::WalkProgram>()?;
    m.add_class::<v1copies::WalkPacket>()?;
    m.add_class::<txport::RealtimeWire>()?;
    m.add_class::<txport::TxPort>()?;
    m.add_class::<rtloop::PortServer>()?;
    m.add("P4_STATUS_END", p4vm::STATUS_END)?;
    m.add("P4_STATUS_REJECT", p4vm::STATUS_REJECT)?;
    m.add("DEFAULT_QUEUE_DEPTH", tm::DEFAULT_QUEUE_DEPTH)?;
    m.add("MAX_QUEUE_DEPTH", tm::MAX_QUEUE_DEPTH)?;
    // The calls across layers without Python: a lower module reaches the one above through
    // these (a link its far ends, a port its switch's walk, a TM the walk as its service).
    let _ = link::FAST_ENDS.set([linkport::fast_end, hostrecv::fast_end]);
    let _ = linkport::WALK_RECEIVE.set(&v1walk::PORT_RECEIVE);
    let _ = tm::WALK_SERVICE.set(&v1walk::TM_SERVICE);
    Ok(())
}
