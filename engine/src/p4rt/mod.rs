//! P4Runtime on the engine: the gRPC front end (`p4rtfront`), table Writes decoded and applied
//! (`p4rtwrite`), Reads encoded (`p4rtread`), and the Writes and keyed Reads the front end
//! answers with no Python run (`p4rtnative`).

pub(crate) mod p4rtfront;
pub(crate) mod p4rtnative;
pub(crate) mod p4rtread;
pub(crate) mod p4rtwrite;
