//! Register and counter cells: the one store of a P4 register array or counter array.
//!
//! Why one store, shared: the data plane updates them per packet (in the engine, `P4Program`'s
//! register and count instructions) and the control plane reads and writes them now and then
//! (P4Runtime, Thrift, tests, the closures of the differential oracle), so both sides hold the
//! same `Cells`: p4switch/state/externs.py's `RegisterArray.cells` and `CounterArray.packets` /
//! `.bytes` are these objects, indexed like the lists they replace. Values are `u64` wrapped to
//! the cells' width (a register's `bit<w>`, 64 for counters).

use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

pub type Shared = Arc<Mutex<Vec<u64>>>;

/// A fixed-size array of unsigned cells of one width.
#[pyclass(module = "hbh_engine", frozen, sequence)]
pub struct Cells {
    pub data: Shared,
    pub mask: u64,
}

pub fn lock(d: &Shared) -> MutexGuard<'_, Vec<u64>> {
    d.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cells {
    fn index(&self, i: isize, len: usize) -> PyResult<usize> {
        let j = if i < 0 { i + len as isize } else { i };
        if j < 0 || j as usize >= len {
            return Err(PyIndexError::new_err("cell index out of range"));
        }
        Ok(j as usize)
    }
}

#[pymethods]
impl Cells {
    /// `size` cells of `width` bits (1..64), all 0.
    #[new]
    fn new(size: usize, width: u32) -> PyResult<Self> {
        if width == 0 || width > 64 {
            return Err(PyValueError::new_err(format!(
                "Cells: width {width} not in 1..64"
            )));
        }
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        Ok(Cells {
            data: Arc::new(Mutex::new(vec![0; size])),
            mask,
        })
    }

    fn __len__(&self) -> usize {
        lock(&self.data).len()
    }

    fn __getitem__(&self, i: isize) -> PyResult<u64> {
        let d = lock(&self.data);
        let j = self.index(i, d.len())?;
        Ok(d[j])
    }

    /// Store `value` wrapped to the width (a data-plane write; the caller checks ranges).
    fn __setitem__(&self, i: isize, value: u64) -> PyResult<()> {
        let mut d = lock(&self.data);
        let j = self.index(i, d.len())?;
        d[j] = value & self.mask;
        Ok(())
    }

    /// Add `n` to cell `i` if it exists (a data-plane count: out of range is ignored).
    fn add(&self, i: u64, n: u64) {
        let mut d = lock(&self.data);
        if let Some(c) = d.get_mut(i as usize) {
            *c = c.wrapping_add(n) & self.mask;
        }
    }

    /// Every cell set to 0.
    fn reset(&self) {
        lock(&self.data).iter_mut().for_each(|c| *c = 0);
    }

    /// The cells as a list.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, lock(&self.data).iter())
    }

    /// Equal to another `Cells` or a sequence of the same values.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let mine = lock(&self.data).clone();
        if let Ok(o) = other.downcast::<Cells>() {
            return *lock(&o.get().data) == mine;
        }
        other
            .extract::<Vec<u64>>()
            .map(|v| v == mine)
            .unwrap_or(false)
    }

    fn __repr__(&self) -> String {
        format!("Cells({:?})", lock(&self.data))
    }
}
