//! How many rounds a repeated run may have (`--repeat N`, fio's `numruns`), read once for
//! both spellings.

/// The most rounds one run may have: enough for any interval (the t quantile at 99 degrees
/// of freedom is within 1% of its limit), few enough that a typo (`--repeat 1000`) is
/// caught before it takes a day.
pub const MAX_ROUNDS: u32 = 100;

/// Reads a round count: a whole number from 1 to [`MAX_ROUNDS`]. The error is a phrase for
/// the caller to put after the option's name and value (`--repeat 0: at least 1 …`).
pub fn parse_count(s: &str) -> Result<u32, String> {
    let n: i128 = s
        .trim()
        .parse()
        .map_err(|_| "not a whole number of rounds".to_string())?;
    if n < 1 {
        return Err("at least 1 round is needed".into());
    }
    if n > i128::from(MAX_ROUNDS) {
        return Err(format!(
            "at most {MAX_ROUNDS} rounds (repeat in several runs for more)"
        ));
    }
    Ok(n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_checked() {
        assert_eq!(parse_count("3"), Ok(3));
        assert_eq!(parse_count("100"), Ok(100));
        for (bad, why) in [
            ("0", "at least 1"),
            ("-2", "at least 1"),
            ("101", "at most 100"),
            (
                "1000000000000000000000000000000000000000",
                "not a whole number",
            ),
            ("x", "not a whole number"),
            ("2.5", "not a whole number"),
            ("", "not a whole number"),
        ] {
            let e = parse_count(bad).unwrap_err();
            assert!(e.starts_with(why), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
