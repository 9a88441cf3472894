//! End hosts on the engine's path: the paced sender and playout buffer (`host`), the receiver
//! and its reports (`hostrecv`) and a netns host's frame relay (`hostrelay`).

pub(crate) mod host;
pub(crate) mod hostrecv;
pub(crate) mod hostrelay;
