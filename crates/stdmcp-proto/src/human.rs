//! Durations written for people: settings exactly, elapsed times rounded, and never "0 s"
//! for something that lasts a moment (under a second is written in milliseconds).

use std::time::Duration;

/// A configured duration (a timeout, a delay, an interval), exactly to the millisecond:
/// `250 ms`, `1.5 s`, `60 s`.
pub fn setting(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{} ms", d.as_millis());
    }
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        let s = format!("{}.{:03}", ms / 1000, ms % 1000);
        format!("{} s", s.trim_end_matches('0'))
    }
}

/// A time that has passed: `250 ms`, `2.5 s` under 10 s, whole seconds under two minutes,
/// then `3 min 5 s`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d < Duration::from_secs(10) {
        let tenths = d.as_millis() / 100;
        match tenths % 10 {
            0 => format!("{} s", tenths / 10),
            t => format!("{}.{t} s", tenths / 10),
        }
    } else if s < 120 {
        format!("{s} s")
    } else {
        format!("{} min {} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_second_durations_are_milliseconds_never_zero_seconds() {
        let ms = Duration::from_millis;
        assert_eq!(setting(ms(250)), "250 ms");
        assert_eq!(setting(ms(1500)), "1.5 s");
        assert_eq!(setting(ms(1250)), "1.25 s");
        assert_eq!(setting(ms(60_000)), "60 s");
        assert_eq!(elapsed(ms(300)), "300 ms");
        assert_eq!(elapsed(ms(2_049)), "2 s");
        assert_eq!(elapsed(ms(2_500)), "2.5 s");
        assert_eq!(elapsed(ms(59_900)), "59 s");
        assert_eq!(elapsed(ms(185_000)), "3 min 5 s");
    }
}
