//! The allocator of KV Gate's programs: the system's, asking Linux to back each large
//! allocation with 2 MiB pages (transparent huge pages, which Debian leaves to `madvise`).
//!
//! The analysis of a million requests fills ~180 MiB once, much of it in a few large buffers
//! (the request rows, the runs' dictionaries and columns, the latencies it sorts). Each 4 KiB
//! page first written is a page fault: 51,000 in `kvgate analyze` of the bench's million
//! requests, an eighth of its time in the profile. With its large buffers advised, 26,000
//! (`perf stat -e page-faults`); the rest are small allocations, and memory the system
//! allocator reuses after giving it back.
//!
//! Only advice: where the kernel does not take it (huge pages off, another system), nothing
//! changes. Small allocations are left as they are, and a huge page advised lies wholly inside
//! one allocation. A large buffer's unwritten tail may become resident a huge page at a time;
//! the analysis' peak did not grow by it (177 MiB in `make bench`, 186 MiB before).

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator, with allocations of at least [`LARGE`] bytes advised onto huge pages.
pub struct LargeOnHugePages;

/// A huge page.
const HUGE: usize = 2 << 20;
/// The smallest allocation advised: one that may hold a whole huge page.
const LARGE: usize = HUGE;

// SAFETY: every call is the system allocator's; the advice never moves or frees memory.
unsafe impl GlobalAlloc for LargeOnHugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size < LARGE || new_size <= layout.size() {
            return System.realloc(p, layout, new_size);
        }
        // Grown large: a new, advised allocation the bytes are copied into. The system's
        // realloc would copy them into 4 KiB pages before any advice could be given (a vector
        // grown by pushing is filled that way).
        let q = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
        if !q.is_null() {
            std::ptr::copy_nonoverlapping(p, q, layout.size());
            System.dealloc(p, layout);
        }
        q
    }
}

/// Advises the huge pages that lie wholly inside `size` bytes at `p` (none below [`LARGE`]).
fn advise(p: *mut u8, size: usize) {
    if p.is_null() || size < LARGE {
        return;
    }
    let from = (p as usize).next_multiple_of(HUGE);
    let to = (p as usize + size) / HUGE * HUGE;
    if to > from {
        #[cfg(target_os = "linux")]
        // SAFETY: the range lies inside an allocation just made; the advice changes how its
        // pages are backed, never their contents. A refusal is ignored: it is only advice.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the allocator hands out is the system's, written and read whole, large or small,
    /// grown and shrunk across the advised size.
    #[test]
    fn large_and_small_allocations_hold_what_is_written() {
        let a = LargeOnHugePages;
        for size in [1, 4096, LARGE - 1, LARGE, 3 * LARGE + 12_345] {
            let layout = Layout::from_size_align(size, 64).unwrap();
            unsafe {
                let p = a.alloc(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % 64, 0);
                for i in (0..size).step_by(997) {
                    *p.add(i) = (i % 251) as u8;
                }
                let q = a.realloc(p, layout, size * 3);
                for i in (0..size).step_by(997) {
                    assert_eq!(*q.add(i), (i % 251) as u8, "size {size} at {i}");
                }
                a.dealloc(q, Layout::from_size_align(size * 3, 64).unwrap());
                let z = a.alloc_zeroed(layout);
                assert!((0..size).step_by(4093).all(|i| *z.add(i) == 0));
                a.dealloc(z, layout);
            }
        }
    }
}
