//! Borrowing Python buffers across a GIL release.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A byte region of a Python buffer that stays valid while its `PyBuffer` is held.
pub struct RawBytes {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the PyBuffer that owns the memory outlives every use of RawBytes (callers keep it
// on the stack across `py.detach`), and exporters such as bytearray refuse to resize while
// a buffer is exported.
unsafe impl Send for RawBytes {}

impl RawBytes {
    /// # Safety
    /// Only while the `PyBuffer` it came from is alive.
    pub unsafe fn as_slice(&self) -> &[u8] {
        std::slice::from_raw_parts(self.ptr, self.len)
    }
    /// # Safety
    /// Only while the `PyBuffer` it came from is alive and writable.
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.ptr, self.len)
    }
}

/// A contiguous byte buffer and whether it may be written in place.
pub fn borrow(buffer: &PyBuffer<u8>) -> PyResult<(RawBytes, bool)> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "records buffer must be C-contiguous bytes",
        ));
    }
    let raw = RawBytes {
        ptr: buffer.buf_ptr().cast::<u8>(),
        len: buffer.len_bytes(),
    };
    Ok((raw, !buffer.readonly()))
}
