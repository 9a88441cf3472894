//! Virtual time and the links: the event heap and scheduler (`sched`), a control channel's latency
//! (`channel`), a link's serializer and wire (`link`) and a switch port on a link (`linkport`).

pub(crate) mod channel;
pub(crate) mod link;
pub(crate) mod linkport;
pub(crate) mod sched;
