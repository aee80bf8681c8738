//! ISO 8601 UTC timestamps for the wire (task times, log listings), without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds); times before 1970 as the epoch.
pub fn iso8601(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}.{:03}Z", seconds(since.as_secs()), since.subsec_millis())
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds); times before 1970 as the epoch.
pub fn iso8601_seconds(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}Z", seconds(since.as_secs()))
}

/// `YYYY-MM-DDTHH:MM:SS` of `secs` seconds since 1970-01-01 UTC.
fn seconds(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (non-negative here).
    let z = days as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_and_leap_days() {
        assert_eq!(iso8601_seconds(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let at = |s| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(iso8601_seconds(at(1_795_000_000)), "2026-11-18T11:06:40Z");
        assert_eq!(iso8601_seconds(at(951_782_400)), "2000-02-29T00:00:00Z");
        let t = at(1_795_000_000) + Duration::from_millis(7);
        assert_eq!(iso8601(t), "2026-11-18T11:06:40.007Z");
    }
}
