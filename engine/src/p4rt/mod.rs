//! P4Runtime on the engine: the gRPC front end (`p4rtfront`), table Writes decoded and applied
//! (`p4rtwrite`) and Reads encoded (`p4rtread`).

pub(crate) mod p4rtfront;
pub(crate) mod p4rtread;
pub(crate) mod p4rtwrite;
