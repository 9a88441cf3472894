//! The P4 VM: a program's blocks and their run (`p4vm`), its instructions (`p4ins`) and their
//! load-time fusion (`p4fuse`), its tables (`p4tables`), register and counter cells (`p4cells`).
//! It knows nothing of v1model: an architecture is the walk that calls its blocks (`v1model/`).

pub(crate) mod p4cells;
pub(crate) mod p4fuse;
pub(crate) mod p4ins;
pub(crate) mod p4tables;
pub(crate) mod p4vm;
