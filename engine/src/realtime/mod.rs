//! p4switch's real-time forwarding: AF_PACKET sockets (`afpacket`), a port's real-time wire and
//! transmit queue (`txport`) and the loop that serves ports (`rtloop`).

pub(crate) mod afpacket;
pub(crate) mod rtloop;
pub(crate) mod txport;
