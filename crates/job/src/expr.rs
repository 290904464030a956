//! fio's parenthesised arithmetic: `(4k*2)`, `(1m+30s)`, `($ncpus*2)`.
//!
//! Operators `+ - * / % ^` with the usual precedence (`^` binds tightest and is
//! right-associative), unary minus, nesting, and unit suffixes after a number or a closing
//! parenthesis. Integers stay exact; a decimal point anywhere makes the result a float that
//! is truncated at the end, as fio does. Unit suffixes follow the same rules as outside an
//! expression (kb_base for sizes), which is where storbench is more consistent than fio's
//! own expression lexer.

use crate::units;

/// How suffixes inside an expression are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExprUnits {
    /// Byte counts: `k`, `m`, `KiB`, … under the given kb_base.
    Size { kb_base: u32 },
    /// Durations: suffixes convert to microseconds.
    Time,
    /// No suffixes at all (the `$ncpus*2` style, which fio hands to `bc`).
    Plain,
}

/// A value during evaluation: exact integer until a float is involved.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// The result of an expression: its value, and whether any unit suffix appeared (fio then
/// reads unit-less numbers in a time expression as microseconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Evaluated {
    pub value: f64,
    pub exact: Option<i128>,
    pub units_given: bool,
}

/// Deep enough for any sane job file, shallow enough that hostile input cannot blow the stack.
const MAX_DEPTH: usize = 64;

/// Evaluates `src` (the whole value, usually starting with `(`).
pub(crate) fn eval(src: &str, units: ExprUnits) -> Result<Evaluated, String> {
    let mut p = Parser {
        s: src.as_bytes(),
        pos: 0,
        units,
        units_given: false,
        depth: 0,
    };
    let v = p.expr()?;
    p.skip_space();
    if p.pos != p.s.len() {
        return Err(format!(
            "unexpected '{}' in expression",
            &src[p.pos..].chars().next().unwrap_or(' ')
        ));
    }
    Ok(Evaluated {
        value: v.as_f64(),
        exact: match v {
            Num::Int(i) => Some(i),
            Num::Float(_) => None,
        },
        units_given: p.units_given,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    units: ExprUnits,
    units_given: bool,
    depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t') {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.s.get(self.pos).copied()
    }

    fn expr(&mut self) -> Result<Num, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("expression nested too deeply".into());
        }
        let mut acc = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let rhs = self.term()?;
            acc = arith(acc, rhs, op)?;
        }
        self.depth -= 1;
        Ok(acc)
    }

    fn term(&mut self) -> Result<Num, String> {
        let mut acc = self.unary()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let rhs = self.unary()?;
            acc = arith(acc, rhs, op)?;
        }
        Ok(acc)
    }

    fn unary(&mut self) -> Result<Num, String> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err("expression nested too deeply".into());
            }
            let v = self.unary()?;
            self.depth -= 1;
            return Ok(match v {
                Num::Int(i) => Num::Int(-i),
                Num::Float(f) => Num::Float(-f),
            });
        }
        self.power()
    }

    fn power(&mut self) -> Result<Num, String> {
        let base = self.postfix()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let exp = self.unary()?;
            return pow(base, exp);
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<Num, String> {
        let mut v = self.atom()?;
        // A unit suffix directly after a number or a closing parenthesis.
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_alphabetic() {
            self.pos += 1;
        }
        if self.pos > start {
            let suffix = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
            let mult = self.suffix_multiplier(suffix)?;
            self.units_given = true;
            v = arith(v, Num::Int(mult as i128), b'*')?;
        }
        Ok(v)
    }

    fn suffix_multiplier(&self, suffix: &str) -> Result<u64, String> {
        match self.units {
            ExprUnits::Size { kb_base } => units::size_multiplier(suffix, kb_base)
                .ok_or_else(|| format!("'{suffix}' is not a size unit")),
            ExprUnits::Time => units::time_multiplier_us(suffix)
                .ok_or_else(|| format!("'{suffix}' is not a time unit")),
            ExprUnits::Plain => Err(format!(
                "unit '{suffix}' is not allowed here (plain numbers only)"
            )),
        }
    }

    fn atom(&mut self) -> Result<Num, String> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(b')') {
                    return Err("missing ')' in expression".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) => Err(format!("unexpected '{}' in expression", c as char)),
            None => Err("expression ends too early".into()),
        }
    }

    fn number(&mut self) -> Result<Num, String> {
        let rest = &self.s[self.pos..];
        if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
            let digits = rest[2..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            let text = std::str::from_utf8(&rest[2..2 + digits]).unwrap_or("");
            let v = i128::from_str_radix(text, 16).map_err(|_| "bad hex number".to_string())?;
            self.pos += 2 + digits;
            return Ok(Num::Int(v));
        }
        let mut end = 0;
        let mut float = false;
        while end < rest.len() && (rest[end].is_ascii_digit() || rest[end] == b'.') {
            float |= rest[end] == b'.';
            end += 1;
        }
        // Exponent (`1e3`), only when followed by digits, so `1m` stays a unit.
        if end + 1 < rest.len() && (rest[end] | 0x20) == b'e' {
            let mut k = end + 1;
            if k < rest.len() && matches!(rest[k], b'+' | b'-') {
                k += 1;
            }
            if k < rest.len() && rest[k].is_ascii_digit() {
                while k < rest.len() && rest[k].is_ascii_digit() {
                    k += 1;
                }
                end = k;
                float = true;
            }
        }
        let text = std::str::from_utf8(&rest[..end]).unwrap_or("");
        self.pos += end;
        if float {
            let f: f64 = text
                .parse()
                .map_err(|_| format!("bad number '{text}' in expression"))?;
            Ok(Num::Float(f))
        } else {
            text.parse::<i128>()
                .map(Num::Int)
                .map_err(|_| format!("number '{text}' is too large"))
        }
    }
}

fn arith(a: Num, b: Num, op: u8) -> Result<Num, String> {
    const OVERFLOW: &str = "arithmetic overflow in expression";
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => {
            let r = match op {
                b'+' => x.checked_add(y),
                b'-' => x.checked_sub(y),
                b'*' => x.checked_mul(y),
                b'/' | b'%' if y == 0 => return Err("division by zero in expression".into()),
                b'/' => x.checked_div(y),
                _ => x.checked_rem(y),
            };
            r.map(Num::Int).ok_or_else(|| OVERFLOW.to_string())
        }
        _ => {
            let (x, y) = (a.as_f64(), b.as_f64());
            let r = match op {
                b'+' => x + y,
                b'-' => x - y,
                b'*' => x * y,
                b'/' if y == 0.0 => return Err("division by zero in expression".into()),
                b'/' => x / y,
                _ => return Err("'%' needs whole numbers".into()),
            };
            if r.is_finite() {
                Ok(Num::Float(r))
            } else {
                Err(OVERFLOW.into())
            }
        }
    }
}

fn pow(base: Num, exp: Num) -> Result<Num, String> {
    if let (Num::Int(b), Num::Int(e)) = (base, exp)
        && e >= 0
    {
        let e = u32::try_from(e).map_err(|_| "exponent too large".to_string())?;
        return b
            .checked_pow(e)
            .map(Num::Int)
            .ok_or_else(|| "arithmetic overflow in expression".into());
    }
    let r = base.as_f64().powf(exp.as_f64());
    if r.is_finite() {
        Ok(Num::Float(r))
    } else {
        Err("arithmetic overflow in expression".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(s: &str) -> f64 {
        eval(s, ExprUnits::Size { kb_base: 1024 }).unwrap().value
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(size("(1+2*3)"), 7.0);
        assert_eq!(size("((1+2)*3)"), 9.0);
        assert_eq!(size("(2^3^2)"), 512.0);
        assert_eq!(size("(10-4-3)"), 3.0);
        assert_eq!(size("(-2^2)"), -4.0);
        assert_eq!(size("(7/2)"), 3.0);
        assert_eq!(size("(7.0/2)"), 3.5);
        assert_eq!(size("(17%5)"), 2.0);
        assert_eq!(size("(2^-1)"), 0.5);
    }

    #[test]
    fn units_follow_kb_base() {
        assert_eq!(size("(4k*2)"), 8192.0);
        assert_eq!(size("(1KiB)"), 1000.0);
        let k1000 = eval("(4k)", ExprUnits::Size { kb_base: 1000 }).unwrap();
        assert_eq!(k1000.value, 4000.0);
        assert!(k1000.units_given);
        assert_eq!(size("((1+1)m)"), 2.0 * 1024.0 * 1024.0);
        assert_eq!(size("(0x10*2)"), 32.0);
    }

    #[test]
    fn time_units_are_microseconds() {
        let t = eval("(1m+30s)", ExprUnits::Time).unwrap();
        assert_eq!(t.value, 90e6);
        assert!(t.units_given);
        let t = eval("(10*2)", ExprUnits::Time).unwrap();
        assert_eq!(t.value, 20.0);
        assert!(!t.units_given);
    }

    #[test]
    fn errors_are_reported_not_panicked() {
        for bad in [
            "(1/0)", "(1%0)", "(", "(1+)", "(1))", "(4q)", "(1.5%2)", "()", "(9^999)",
        ] {
            assert!(
                eval(bad, ExprUnits::Size { kb_base: 1024 }).is_err(),
                "{bad}"
            );
        }
        assert!(eval("(2k)", ExprUnits::Plain).is_err());
        let deep = "(".repeat(500) + "1" + &")".repeat(500);
        assert!(eval(&deep, ExprUnits::Plain).is_err());
    }
}
