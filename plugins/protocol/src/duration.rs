//! Durations as the driver's and the SDK's environment variables give them
//! (`HOLO_KILL_GRACE`, `HOLO_STALE_LOCK_WAIT`) and as messages show them.

use std::time::Duration;

/// `90`, `90s`, `15m`, `2h`: `Some(None)` for `0` (no limit), `None` when
/// the text is no duration.
pub fn parse_duration(text: &str) -> Option<Option<Duration>> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = digits.parse().ok()?;
    let seconds = match unit {
        "s" => number,
        "m" => number.checked_mul(60)?,
        "h" => number.checked_mul(3600)?,
        _ => return None,
    };
    Some((seconds > 0).then(|| Duration::from_secs(seconds)))
}

/// `1h`, `10m`, `90s`: the largest unit that divides the duration.
pub fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds > 0 && seconds.is_multiple_of(3600) {
        format!("{}h", seconds / 3600)
    } else if seconds > 0 && seconds.is_multiple_of(60) {
        format!("{}m", seconds / 60)
    } else {
        format!("{seconds}s")
    }
}
