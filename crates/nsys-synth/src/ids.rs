//! Packed "Serialized GlobalId" values: `(hw << 56) | (vm << 48) | (pid << 24) | tid`.

/// Every real export we inspected has VM id 1 and hardware id 0.
pub(crate) const VM_ID: i64 = 1;
pub(crate) const HW_ID: i64 = 0;

/// Largest pid or tid that fits the 24-bit fields.
pub(crate) const MAX_OS_ID: u32 = (1 << 24) - 1;

/// The id of the whole (virtual) machine, used by `globalVid` and `TARGET_INFO_GPU.vmId`.
pub(crate) fn global_vid() -> i64 {
    (HW_ID << 56) | (VM_ID << 48)
}

pub(crate) fn global_pid(pid: u32) -> i64 {
    global_vid() | (i64::from(pid) << 24)
}

pub(crate) fn global_tid(pid: u32, tid: u32) -> i64 {
    global_pid(pid) | i64::from(tid)
}

#[cfg(test)]
mod tests {
    #[test]
    fn packs_like_a_real_export() {
        // From a 3.24.0 export: pid 1246, main thread 1246.
        assert_eq!(super::global_tid(1246, 1246), 281_495_881_123_038);
        assert_eq!(super::global_pid(1246), 281_495_881_121_792);
    }
}
