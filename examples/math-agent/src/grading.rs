//! Grading a reply: find the last number in free text ("1,200", "-3", "4.5") and compare it with
//! the expected answer numerically. Pure functions, tested on the host with `cargo test`.

/// The last number written in `text`, if any. Thousands separators are dropped ("1,200" is 1200),
/// a `-` directly before the digits makes it negative unless it follows a letter or digit ("3-2"
/// reads 3 and 2), and a trailing full stop is not a decimal point ("19." is 19).
pub fn last_number(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let mut last = None;
    let mut i = 0;
    while i < bytes.len() {
        if !digit_at(i) {
            i += 1;
            continue;
        }
        let negative = i > 0 && bytes[i - 1] == b'-' && (i < 2 || !bytes[i - 2].is_ascii_alphanumeric());
        let mut number = String::from(if negative { "-" } else { "" });
        while digit_at(i) || (bytes.get(i) == Some(&b',') && digit_at(i + 1)) {
            if bytes[i] != b',' {
                number.push(char::from(bytes[i]));
            }
            i += 1;
        }
        if bytes.get(i) == Some(&b'.') && digit_at(i + 1) {
            number.push('.');
            i += 1;
            while digit_at(i) {
                number.push(char::from(bytes[i]));
                i += 1;
            }
        }
        last = number.parse::<f64>().ok().or(last);
    }
    last
}

/// Whether `value` is the number `expected` says (commas allowed, e.g. "1,200").
pub fn same_number(value: f64, expected: &str) -> bool {
    expected
        .trim()
        .replace(',', "")
        .parse::<f64>()
        .is_ok_and(|want| (value - want).abs() < 1e-9)
}

/// Feedback on a reply whose last number is `extracted`, when that is not `expected`: "expected
/// 27, got 2.7" ("got no number" when the reply has none); `None` when the answer is right.
pub fn feedback(extracted: Option<f64>, expected: &str) -> Option<String> {
    match extracted {
        Some(value) if same_number(value, expected) => None,
        Some(value) => Some(format!("expected {expected}, got {value}")),
        None => Some(format!("expected {expected}, got no number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_number_wins() {
        assert_eq!(last_number("12 + 7 = 19. The answer is 19"), Some(19.0));
        assert_eq!(last_number("She had 45, gave 18, so 27 are left."), Some(27.0));
    }

    #[test]
    fn separators_decimals_and_signs() {
        assert_eq!(last_number("It costs $1,200."), Some(1200.0));
        assert_eq!(last_number("about 4.5 km"), Some(4.5));
        assert_eq!(last_number("the change is -3"), Some(-3.0));
        assert_eq!(last_number("3-2"), Some(2.0));
        assert_eq!(last_number("list: 1, 2, 3"), Some(3.0));
    }

    #[test]
    fn no_number_is_none() {
        assert_eq!(last_number("I do not know."), None);
        assert_eq!(last_number(""), None);
    }

    #[test]
    fn comparison_is_numeric() {
        assert!(same_number(19.0, "19"));
        assert!(same_number(19.0, " 19.0 "));
        assert!(same_number(1200.0, "1,200"));
        assert!(!same_number(18.0, "19"));
        assert!(!same_number(19.0, "nineteen"));
    }

    #[test]
    fn a_wrong_answer_gets_feedback_a_right_one_none() {
        assert_eq!(feedback(Some(2.7), "27").as_deref(), Some("expected 27, got 2.7"));
        assert_eq!(feedback(Some(-3.0), "3").as_deref(), Some("expected 3, got -3"));
        assert_eq!(feedback(None, "19").as_deref(), Some("expected 19, got no number"));
        assert_eq!(feedback(Some(1200.0), "1,200"), None);
        assert_eq!(feedback(Some(19.0), "19"), None);
    }
}
