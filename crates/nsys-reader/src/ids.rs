//! Packed global ids: `[HW:8][VM:8][PID:24][TID:24]` (nsys-sqlite-schema.md §2.1).
//! Real exports use VM id 1, so the pid must be masked, never just shifted.

const ID_MASK: i64 = 0xFF_FFFF;

/// OS pid of a packed `globalTid` or `globalPid`.
pub fn pid_of(global_id: i64) -> u32 {
    ((global_id >> 24) & ID_MASK) as u32
}

/// OS tid of a packed `globalTid`.
pub fn tid_of(global_tid: i64) -> u32 {
    (global_tid & ID_MASK) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_vm_byte() {
        let gtid = 281_495_881_123_038; // 2^48 + (1246 << 24) + 1246
        assert_eq!(pid_of(gtid), 1246);
        assert_eq!(tid_of(gtid), 1246);
    }
}
