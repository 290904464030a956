//! The one number formatter for text people read: thousands separators, 3–4 significant
//! digits, never more decimals than the value's size warrants. `70987.5` reads `70,988`,
//! `1234.5` reads `1,235`, `123.45` reads `123.5`, `0.01234` reads `0.01234`.
//! Machine formats (JSON, CSV) keep full precision and do not use it.

/// `v` with 4 significant digits below 1000 and as a whole number with separators above.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 999.95 || a == 0.0 {
        return grouped(v.round());
    }
    // Decimals for 4 significant digits: 100 → 1, 10 → 2, 1 → 3, 0.1 → 4, ...; taken
    // from the value rounded to 4 digits, since rounding can carry (9.99996 → 10.00).
    let mut magnitude = a.log10().floor() as i32;
    let scale = 10f64.powi(3 - magnitude);
    if (a * scale).round() / scale >= 10f64.powi(magnitude + 1) {
        magnitude += 1;
    }
    if magnitude >= 3 {
        return grouped(v.round());
    }
    let decimals = (3 - magnitude).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

/// A whole percentage: CPU and utilisation read `7%`, not `7.494`.
pub fn percent(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    format!("{}%", grouped(v.round()))
}

/// The unit of a column of times: the largest of ns, µs, ms and s in which the column's
/// smallest value is at least 1, so one column never mixes `3,785 µs` with `10.42 ms`
/// (it reads `3,785` and `10,420` under `µs`) and no cell starts with `0.0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    /// `ns`, `µs`, `ms` or `s`, for the column's heading.
    pub name: &'static str,
    /// Nanoseconds in one unit.
    pub ns: f64,
}

const TIME_UNITS: [TimeUnit; 4] = [
    TimeUnit {
        name: "ns",
        ns: 1.0,
    },
    TimeUnit {
        name: "µs",
        ns: 1e3,
    },
    TimeUnit {
        name: "ms",
        ns: 1e6,
    },
    TimeUnit { name: "s", ns: 1e9 },
];

impl TimeUnit {
    /// The unit for a column holding `values_ns` (zeros and non-finite values ignored;
    /// µs for an empty column).
    pub fn for_column(values_ns: impl IntoIterator<Item = f64>) -> TimeUnit {
        let least = values_ns
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        if !least.is_finite() {
            return TIME_UNITS[1];
        }
        TIME_UNITS
            .into_iter()
            .rev()
            .find(|u| least >= u.ns)
            .unwrap_or(TIME_UNITS[0])
    }

    /// `ns` in this unit, as [`num`] writes it.
    pub fn cell(self, ns: f64) -> String {
        num(ns / self.ns)
    }
}

/// A whole number with `,` between groups of three digits.
pub fn grouped(v: f64) -> String {
    let n = v as i128;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits_and_separators() {
        assert_eq!(num(70_987.5), "70,988");
        assert_eq!(num(1_234.5), "1,235");
        assert_eq!(num(999.96), "1,000");
        assert_eq!(num(999.94), "999.9");
        assert_eq!(num(123.45), "123.5");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(1.0), "1.000");
        assert_eq!(num(0.012_345), "0.01235");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-2_500_000.0), "-2,500,000");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(num(9.99996), "10.00");
    }

    #[test]
    fn a_column_of_times_has_one_unit() {
        let col = [3_785_000.0, 10_420_000.0];
        let u = TimeUnit::for_column(col);
        assert_eq!(u.name, "ms");
        assert_eq!(u.cell(col[0]), "3.785");
        assert_eq!(u.cell(col[1]), "10.42");
        let u = TimeUnit::for_column([89_600.0, 1_610_000.0, 0.0]);
        assert_eq!(u.name, "µs");
        assert_eq!(u.cell(1_610_000.0), "1,610");
        assert_eq!(TimeUnit::for_column([512.0]).name, "ns");
        assert_eq!(TimeUnit::for_column([2.5e9]).name, "s");
        assert_eq!(TimeUnit::for_column([]).name, "µs");
    }

    #[test]
    fn percentages_are_whole() {
        assert_eq!(percent(7.494), "7%");
        assert_eq!(percent(99.5), "100%");
        assert_eq!(percent(1234.0), "1,234%");
    }
}
