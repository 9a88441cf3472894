//! Register and counter cells: the one store of a P4 register array or counter array.
//!
//! Why one store, shared: the data plane updates them per packet (in the engine, `P4Program`'s
//! register and count instructions) and the control plane reads and writes them now and then
//! (P4Runtime, Thrift, tests, the closures of the differential oracle), so both sides hold the
//! same `Cells`: p4switch/state/externs.py's `RegisterArray.cells` and `CounterArray.packets` /
//! `.bytes` are these objects, indexed like the lists they replace. Values are `u64` wrapped to
//! the cells' width (a register's `bit<w>`, 64 for counters).
//!
//! Why atomics, not a lock: the P4 VM reads or writes a cell several times per packet (alinea.p4's
//! ingress and egress hold 37 register reads, writes and counts), and a lock's take and release
//! were two atomic read-modify-writes each. Every user of the cells holds the GIL (the VM runs
//! with it; the Python side's accesses are method calls), so no two of them run at once: a cell's
//! update is a plain load and store (`Relaxed`, a `mov` on x86), and a read-modify-write (a count)
//! needs no more. The array's size is fixed at creation.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

pub type Shared = Arc<[AtomicU64]>;

/// A fixed-size array of unsigned cells of one width.
#[pyclass(module = "hbh_engine", frozen, sequence)]
pub struct Cells {
    pub data: Shared,
    pub mask: u64,
}

/// Cell `i`'s value (None past the end).
#[inline]
pub fn get(d: &Shared, i: usize) -> Option<u64> {
    d.get(i).map(|c| c.load(Relaxed))
}

/// Store `v` into cell `i` if it exists (the caller wraps it to the width).
#[inline]
pub fn set(d: &Shared, i: usize, v: u64) {
    if let Some(c) = d.get(i) {
        c.store(v, Relaxed);
    }
}

/// `cell[i] <- f(cell[i])` if it exists (one writer at a time: the GIL's holder).
#[inline]
pub fn update(d: &Shared, i: usize, f: impl FnOnce(u64) -> u64) {
    if let Some(c) = d.get(i) {
        c.store(f(c.load(Relaxed)), Relaxed);
    }
}

fn values(d: &Shared) -> Vec<u64> {
    d.iter().map(|c| c.load(Relaxed)).collect()
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
            data: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask,
        })
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }

    fn __getitem__(&self, i: isize) -> PyResult<u64> {
        let j = self.index(i, self.data.len())?;
        Ok(self.data[j].load(Relaxed))
    }

    /// Store `value` wrapped to the width (a data-plane write; the caller checks ranges).
    fn __setitem__(&self, i: isize, value: u64) -> PyResult<()> {
        let j = self.index(i, self.data.len())?;
        self.data[j].store(value & self.mask, Relaxed);
        Ok(())
    }

    /// Add `n` to cell `i` if it exists (a data-plane count: out of range is ignored).
    fn add(&self, i: u64, n: u64) {
        update(&self.data, i as usize, |c| c.wrapping_add(n) & self.mask);
    }

    /// Every cell set to 0.
    fn reset(&self) {
        self.data.iter().for_each(|c| c.store(0, Relaxed));
    }

    /// The cells as a list.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, values(&self.data))
    }

    /// Equal to another `Cells` or a sequence of the same values.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let mine = values(&self.data);
        if let Ok(o) = other.downcast::<Cells>() {
            return values(&o.get().data) == mine;
        }
        other
            .extract::<Vec<u64>>()
            .map(|v| v == mine)
            .unwrap_or(false)
    }

    fn __repr__(&self) -> String {
        format!("Cells({:?})", values(&self.data))
    }
}
