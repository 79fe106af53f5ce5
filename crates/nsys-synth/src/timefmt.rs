//! Wall-clock text as the exporter writes it ("2024-11-19T19:13:03"), without a date crate.

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// UTC time of `epoch_ns`, to the second, in ISO 8601 without a zone.
pub(crate) fn iso_seconds(epoch_ns: i64) -> String {
    let seconds = epoch_ns.div_euclid(1_000_000_000);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let second_of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
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
    }
}
