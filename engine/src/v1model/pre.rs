//! The packet replication engine's data-plane state: clone sessions and multicast groups.
//!
//! Why here: alinea.p4 clones a report on every modelled port at every report interval, and
//! the engine's v1model walk (v1walk.rs) makes those clones (and multicast copies) without a
//! Python call only if it can read the sessions and groups itself. The P4Runtime core keeps
//! what P4Runtime reads and validates (p4switch/state/pre.py, `PacketReplicationEngine`); this
//! is the copy the walk reads, written by that class through one function per kind of object
//! right after each change it makes (as the tables' copy is), and by nothing else.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;

/// One copy: (egress port, instance = `egress_rid`).
pub(crate) type Replica = (u64, u64);

/// A clone session as the walk needs it.
#[derive(Clone)]
pub(crate) struct Session {
    pub(crate) replicas: Vec<Replica>,
    pub(crate) class_of_service: u64,
    /// 0: no truncation
    pub(crate) packet_length_bytes: u64,
}

#[derive(Default)]
struct State {
    sessions: HashMap<u64, Session>,
    groups: HashMap<u64, Vec<Replica>>,
}

/// The sessions and groups of one runtime state (`PacketReplicationEngine.engine`).
#[pyclass(module = "hbh_engine", frozen)]
#[derive(Default)]
pub struct Pre {
    state: Mutex<State>,
}

impl Pre {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn session(&self, id: u64) -> Option<Session> {
        self.lock().sessions.get(&id).cloned()
    }

    pub(crate) fn group(&self, id: u64) -> Option<Vec<Replica>> {
        self.lock().groups.get(&id).cloned()
    }
}

#[pymethods]
impl Pre {
    #[new]
    fn new() -> Self {
        Pre::default()
    }

    /// Session `id` is now this one (inserted or replaced); `replicas`: (port, instance).
    fn set_clone_session(
        &self,
        id: u64,
        replicas: Vec<Replica>,
        class_of_service: u64,
        packet_length_bytes: u64,
    ) {
        let s = Session {
            replicas,
            class_of_service,
            packet_length_bytes,
        };
        self.lock().sessions.insert(id, s);
    }

    /// Session `id` is gone (no clone is made for it).
    fn remove_clone_session(&self, id: u64) {
        self.lock().sessions.remove(&id);
    }

    /// Group `id` is now this one; `replicas`: (port, instance).
    fn set_multicast_group(&self, id: u64, replicas: Vec<Replica>) {
        self.lock().groups.insert(id, replicas);
    }

    /// Group `id` is gone (a packet sent to it is dropped).
    fn remove_multicast_group(&self, id: u64) {
        self.lock().groups.remove(&id);
    }

    /// (session ids, group ids), sorted: for tests that compare the copy with its writer.
    fn ids(&self) -> (Vec<u64>, Vec<u64>) {
        let st = self.lock();
        let mut s: Vec<u64> = st.sessions.keys().copied().collect();
        let mut g: Vec<u64> = st.groups.keys().copied().collect();
        s.sort_unstable();
        g.sort_unstable();
        (s, g)
    }

    /// Session `id` as (replicas, class_of_service, packet_length_bytes), or None.
    fn clone_session(&self, id: u64) -> Option<(Vec<Replica>, u64, u64)> {
        self.session(id)
            .map(|s| (s.replicas, s.class_of_service, s.packet_length_bytes))
    }

    /// Group `id`'s replicas, or None.
    fn multicast_group(&self, id: u64) -> Option<Vec<Replica>> {
        self.group(id)
    }
}
