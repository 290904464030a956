//! A zeroed, page-aligned buffer: O_DIRECT needs the address aligned, and an engine may
//! register it once for all its IO.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

const PAGE: usize = 4096;

pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by one thread at a time.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` rounded up to whole pages.
    pub fn new(len: usize) -> AlignedBuf {
        let size = len.max(1).div_ceil(PAGE) * PAGE;
        let layout = Layout::from_size_align(size, PAGE).expect("page-sized layout is valid");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, layout }
    }

    #[inline]
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Pointer to byte `at` (which must be inside the buffer).
    #[inline]
    pub fn ptr_at(&self, at: usize) -> NonNull<u8> {
        debug_assert!(at < self.layout.size());
        // SAFETY: `at` is within the allocation.
        unsafe { self.ptr.add(at) }
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the allocation is `size` initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    #[inline]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is `size` initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_rounded() {
        let mut b = AlignedBuf::new(300);
        assert_eq!(b.len(), 4096);
        assert_eq!(b.ptr().as_ptr() as usize % PAGE, 0);
        assert!(b.bytes_mut().iter().all(|&x| x == 0));
        assert_eq!(AlignedBuf::new(8192).len(), 8192);
    }
}
