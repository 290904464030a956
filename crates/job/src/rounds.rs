//! How many rounds a repeated run may have (`--repeat N`, fio's `numruns`), read once for
//! both spellings.

/// The most rounds one run may have: enough for any interval (the t quantile at 99 degrees
/// of freedom is within 1% of its limit), few enough that a typo (`--repeat 1000`) is
/// caught before it takes a day.
pub const MAX_ROUNDS: u32 = 100;

/// Reads a round count: a whole number from 1 to [`MAX_ROUNDS`]; the error is one line
/// naming the option and what was given.
pub fn parse_count(name: &str, s: &str) -> Result<u32, String> {
    let n: i128 = s
        .trim()
        .parse()
        .map_err(|_| format!("{name} {s}: not a whole number of rounds"))?;
    if n < 1 {
        return Err(format!("{name} {s}: at least 1 round is needed"));
    }
    if n > i128::from(MAX_ROUNDS) {
        return Err(format!(
            "{name} {s}: at most {MAX_ROUNDS} rounds (repeat in several runs for more)"
        ));
    }
    Ok(n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_checked() {
        assert_eq!(parse_count("--repeat", "3"), Ok(3));
        assert_eq!(parse_count("--repeat", "100"), Ok(100));
        for bad in [
            "0",
            "-2",
            "101",
            "1000000000000000000000000000000000000000",
            "x",
            "2.5",
            "",
        ] {
            let e = parse_count("--repeat", bad).unwrap_err();
            assert!(e.starts_with(&format!("--repeat {bad}:")), "{e}");
            assert!(!e.contains('\n'));
        }
        assert!(
            parse_count("numruns", "101")
                .unwrap_err()
                .contains("at most 100")
        );
    }
}
