//! Software prefetch of memory a packet will need soon.
//!
//! Why: at 1 Gb/s a switch's queues hold thousands of packets, and a link thousands more in
//! flight; each is touched again milliseconds after it was written, when it has left the
//! caches. The next packet a queue serves, and the next frame a link delivers, are known one
//! packet time (microseconds) ahead: asking for their memory then hides the misses.

/// Ask for the cache lines of `bytes` bytes from `ptr` (a hint: no effect on results).
#[inline(always)]
pub(crate) fn lines<T>(ptr: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = ptr as *const i8;
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (ptr, bytes);
    }
}
