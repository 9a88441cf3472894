//! The loop analysis's compiled fluid plant (`fluid`) and its integration loop (`fluid_loop`);
//! nothing on the packet path uses it.

pub(crate) mod fluid;
pub(crate) mod fluid_loop;
