//! Wall-clock text as the exporter writes it ("2024-11-19T19:13:03").

/// UTC time of `epoch_ns`, to the second, in ISO 8601 without a zone.
pub(crate) fn iso_seconds(epoch_ns: i64) -> String {
    // Every i64 of nanoseconds (years 1677 to 2262) is a valid date.
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(epoch_ns))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    use super::iso_seconds;

    #[test]
    fn formats_like_the_exporter() {
        // TARGET_INFO_SESSION_START_TIME of a real 2.9.1 export.
        assert_eq!(
            iso_seconds(1_732_043_583_682_895_739),
            "2024-11-19T19:13:03"
        );
        assert_eq!(iso_seconds(0), "1970-01-01T00:00:00");
        assert_eq!(iso_seconds(951_782_400_000_000_000), "2000-02-29T00:00:00");
        assert_eq!(iso_seconds(-1), "1969-12-31T23:59:59");
    }
}
