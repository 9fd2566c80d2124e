//! Allocation guard for decoding untrusted requests.
//!
//! The generated protocol codec reserves `Vec::with_capacity(n)` for an array length `n`
//! read off the wire, before it knows whether `n` elements follow. With the system
//! allocator a 2^31-element reservation aborts the whole process. Here, reservations of
//! 64 MiB and more are served by `mmap(MAP_NORESERVE)`: address space only, no memory until
//! touched, and the decoder fails on the bytes that are not there long before it touches
//! much. Ordinary allocations go to the system allocator unchanged.

use std::alloc::{GlobalAlloc, Layout, System};

const LARGE: usize = 64 << 20;

pub struct GuardedAlloc;

fn page_aligned_ok(layout: Layout) -> bool {
    layout.align() <= 4096
}

// SAFETY: large blocks come from mmap and return to munmap with the same (rounded) length;
// everything else is delegated to `System`. The size test is the same at alloc, dealloc and
// realloc, so each block is freed by the allocator that made it.
unsafe impl GlobalAlloc for GuardedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE && page_aligned_ok(layout) {
            let p = libc::mmap(
                std::ptr::null_mut(),
                layout.size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            return p.cast();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE && page_aligned_ok(layout) {
            // Fresh anonymous mappings are already zero.
            return self.alloc(layout);
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= LARGE && page_aligned_ok(layout) {
            libc::munmap(ptr.cast(), layout.size());
            return;
        }
        System.dealloc(ptr, layout);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_large = layout.size() >= LARGE && page_aligned_ok(layout);
        let new_large = new_size >= LARGE && page_aligned_ok(layout);
        if !old_large && !new_large {
            return System.realloc(ptr, layout, new_size);
        }
        if old_large && new_large {
            let p = libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE);
            return if p == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                p.cast()
            };
        }
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let new = self.alloc(new_layout);
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}
