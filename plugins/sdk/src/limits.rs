//! Length limits, checked at scan: an over-long name is refused at its
//! resource's line instead of failing later in a system call or a command,
//! and the message echoes only the start of the value.

/// How many bytes of an over-long value a message shows.
const SHOWN_BYTES: usize = 32;

/// `NAME_MAX`: the longest file name (one path component) Linux allows.
pub const NAME_MAX: usize = 255;

/// `PATH_MAX` less the final NUL: the longest path a system call takes.
pub const PATH_MAX: usize = 4095;

/// The message for `what` (`"service name"`) when `value` is longer than
/// `max` bytes, else `None`.
pub fn over_limit(what: &str, value: &str, max: usize) -> Option<String> {
    (value.len() > max).then(|| {
        format!(
            "{what} is {} bytes long, over the limit of {max} bytes: \"{}...\"",
            value.len(),
            start_of(value)
        )
    })
}

/// The first bytes of `value`, cut at a character boundary.
pub fn start_of(value: &str) -> &str {
    let mut end = SHOWN_BYTES.min(value.len());
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_within_the_limit_passes() {
        assert_eq!(over_limit("name", &"a".repeat(255), 255), None);
    }

    #[test]
    fn an_over_long_value_is_named_with_its_length_and_start_only() {
        let message = over_limit("service name", &"x".repeat(5000), 255).unwrap();
        assert_eq!(
            message,
            format!(
                "service name is 5000 bytes long, over the limit of 255 bytes: \"{}...\"",
                "x".repeat(32)
            )
        );
    }

    #[test]
    fn the_start_is_cut_at_a_character_boundary() {
        assert_eq!(start_of(&"é".repeat(40)), "é".repeat(16));
    }
}
