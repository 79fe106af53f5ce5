//! `memcpy` and `memmove` for the static musl build (`scripts/release.sh`).
//!
//! musl's x86_64 `memcpy` starts every copy of 8 bytes or more with `rep movsq`, whose start-up
//! costs tens of cycles, and the converter makes millions of short copies (formatting `.prv`
//! lines, SQLite's row decoding) besides the long ones of its sorts. Measured on a 4-rank
//! training job: with musl's `memcpy` the static binary spent 37 % of its time there and needed
//! twice the CPU time of the glibc build. These definitions take precedence over musl's at link
//! time, for the Rust code and for the bundled C (SQLite, mimalloc) alike.
//!
//! Short copies move overlapping head and tail words (no loop, no branch on alignment); long
//! ones use `rep movsq`, which is fast for long copies. There are no loops in Rust here, so the
//! compiler cannot turn one back into a call to `memcpy`.
//!
//! `nsys2prv-rs` depends on this crate for x86_64 musl targets only, and names it (`use
//! musl_memcpy as _`) so that it is linked; the symbols exist in optimized builds only. The
//! crate's only code is this unsafe copy (x86_64 only), tested against `copy_within` here.
#![cfg(target_arch = "x86_64")]

use std::arch::asm;
use std::ptr::{read_unaligned, write_unaligned};

/// Copies `len` bytes from `src` to `dst`; the ranges may overlap.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `len` bytes.
#[inline(always)]
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    // Every branch reads all it needs before it writes, so overlap is harmless up to 64 bytes.
    match len {
        0 => {}
        1..=3 => {
            let (first, middle, last) = (*src, *src.add(len / 2), *src.add(len - 1));
            *dst = first;
            *dst.add(len / 2) = middle;
            *dst.add(len - 1) = last;
        }
        4..=7 => copy_head_and_tail::<u32>(dst, src, len),
        8..=15 => copy_head_and_tail::<u64>(dst, src, len),
        16..=32 => copy_head_and_tail::<u128>(dst, src, len),
        33..=64 => {
            let head = read_unaligned(src.cast::<[u128; 2]>());
            let tail = read_unaligned(src.add(len - 32).cast::<[u128; 2]>());
            write_unaligned(dst.cast::<[u128; 2]>(), head);
            write_unaligned(dst.add(len - 32).cast::<[u128; 2]>(), tail);
        }
        _ if (dst as usize).wrapping_sub(src as usize) >= len => copy_forward(dst, src, len),
        _ => copy_backward(dst, src, len),
    }
}

/// Copies `len` bytes, `size_of::<T>() <= len <= 2 * size_of::<T>()`, as two words of type `T`.
#[inline(always)]
unsafe fn copy_head_and_tail<T>(dst: *mut u8, src: *const u8, len: usize) {
    let head = read_unaligned(src.cast::<T>());
    let tail = read_unaligned(src.add(len - size_of::<T>()).cast::<T>());
    write_unaligned(dst.cast::<T>(), head);
    write_unaligned(dst.add(len - size_of::<T>()).cast::<T>(), tail);
}

/// A long copy where `dst` does not lie within `src..src + len` (it is before it, or apart):
/// quadwords from the start, then the last 16 bytes, read before anything was written.
#[inline(always)]
unsafe fn copy_forward(dst: *mut u8, src: *const u8, len: usize) {
    let tail = read_unaligned(src.add(len - 16).cast::<u128>());
    // Up to 7 bytes of the tail are copied twice; that is cheaper than a byte loop.
    let quadwords = (len - 16).div_ceil(8);
    asm!(
        "rep movsq",
        inout("rcx") quadwords => _,
        inout("rdi") dst => _,
        inout("rsi") src => _,
        options(nostack, preserves_flags)
    );
    write_unaligned(dst.add(len - 16).cast::<u128>(), tail);
}

/// A long copy onto a later, overlapping address: bytes from the end (rare: `Vec::insert`,
/// `copy_within`).
#[inline(always)]
unsafe fn copy_backward(dst: *mut u8, src: *const u8, len: usize) {
    asm!(
        "std",
        "rep movsb",
        "cld",
        inout("rcx") len => _,
        inout("rdi") dst.add(len - 1) => _,
        inout("rsi") src.add(len - 1) => _,
        options(nostack)
    );
}

/// musl's `memcpy`, replaced in optimized musl builds only: elsewhere libc's is fast, and without
/// optimization the word copies above could become calls to `memcpy` themselves.
///
/// # Safety
/// As [`copy`].
#[cfg(all(target_env = "musl", not(debug_assertions)))]
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, len: usize) -> *mut u8 {
    copy(dst, src, len);
    dst
}

/// musl's `memmove` jumps into its `memcpy`, so it is replaced with it (a definition of `memcpy`
/// alone would clash with musl's at link time).
///
/// # Safety
/// As [`copy`].
#[cfg(all(target_env = "musl", not(debug_assertions)))]
#[no_mangle]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, len: usize) -> *mut u8 {
    copy(dst, src, len);
    dst
}

#[cfg(test)]
mod tests {
    use super::copy;

    /// Every length up to 300 and some long ones, at every relative offset within ±80 bytes
    /// (overlapping both ways, and apart), against `slice::copy_within`.
    #[test]
    fn copies_like_copy_within_for_any_length_and_overlap() {
        let data: Vec<u8> = (0..12_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let lengths = (0..=300).chain([511, 512, 513, 1000, 4095, 4096, 4097]);
        for len in lengths {
            for offset in -80..=80isize {
                let src_start = 6000;
                let dst_start = (src_start as isize + offset) as usize;
                let mut expected = data.clone();
                expected.copy_within(src_start..src_start + len, dst_start);
                let mut actual = data.clone();
                let base = actual.as_mut_ptr();
                unsafe { copy(base.add(dst_start), base.add(src_start), len) };
                assert!(actual == expected, "len {len}, offset {offset}");
            }
        }
    }

    #[test]
    fn copies_between_separate_buffers() {
        for len in [
            0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 5000,
        ] {
            let src: Vec<u8> = (0..len).map(|i| (i % 253) as u8 + 1).collect();
            let mut dst = vec![0u8; len + 2];
            unsafe { copy(dst.as_mut_ptr().add(1), src.as_ptr(), len) };
            assert_eq!(&dst[1..=len], &src[..], "len {len}");
            assert_eq!((dst[0], dst[len + 1]), (0, 0), "len {len}: wrote outside");
        }
    }
}
