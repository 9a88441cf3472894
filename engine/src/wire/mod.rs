//! A packet's bytes and the formats read off them: the frame type the path carries (`frame`),
//! software prefetch of what a packet needs next (`prefetch`), the hosts' data datagram (`datagram`)
//! and the controller header of a packet-in (`ctrlheader`). The bottom of the crate: it names none
//! of the other folders.

pub(crate) mod ctrlheader;
pub(crate) mod datagram;
pub(crate) mod frame;
pub(crate) mod prefetch;
