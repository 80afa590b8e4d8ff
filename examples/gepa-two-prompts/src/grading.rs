//! Grading a reply by its last number, and feedback that names the failure: the answer written
//! earlier but not last (a format failure), or a number in another unit than the question asks
//! for (a unit failure). Pure functions, tested on the host with `cargo test`.

/// Every number written in `text`, in order ("1,200" is 1200; "1.5" is 1.5; "19." is 19).
pub fn numbers(text: &str) -> Vec<f64> {
    let bytes = text.as_bytes();
    let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !digit_at(i) {
            i += 1;
            continue;
        }
        let mut number = String::new();
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
        if let Ok(value) = number.parse::<f64>() {
            found.push(value);
        }
    }
    found
}

/// Whether `value` is the number `expected` says.
fn same_number(value: f64, expected: &str) -> bool {
    expected
        .trim()
        .replace(',', "")
        .parse::<f64>()
        .is_ok_and(|want| (value - want).abs() < 1e-9)
}

/// A graded reply.
#[derive(Debug, PartialEq)]
pub struct Grade {
    pub correct: bool,
    /// The reply's last number.
    pub last: Option<f64>,
    /// What went wrong, for a wrong answer.
    pub feedback: Option<String>,
}

impl Grade {
    /// One line for the log.
    pub fn summary(&self) -> String {
        let last = self.last.map_or_else(|| "no number".to_owned(), |v| v.to_string());
        match &self.feedback {
            None => format!("right ({last})"),
            Some(why) => format!("wrong ({last}): {why}"),
        }
    }
}

/// Grades `reply` against `expected` (in `unit`, when the question asks for one).
pub fn grade(reply: &str, expected: &str, unit: Option<&str>) -> Grade {
    let all = numbers(reply);
    let last = all.last().copied();
    let correct = last.is_some_and(|v| same_number(v, expected));
    let shown = last.map_or_else(|| "no number".to_owned(), |v| v.to_string());
    let feedback = if correct {
        None
    } else if all.iter().any(|&v| same_number(v, expected)) {
        Some(format!(
            "the reply's last number is {shown}, not the answer {expected}: the answer appears \
             earlier in the reply, and only the last number is graded"
        ))
    } else if let Some(unit) = unit {
        Some(format!(
            "expected {expected} {unit}, got {shown}: the answer must be in {unit}, the unit the question asks for"
        ))
    } else {
        Some(format!("expected {expected}, got {shown}"))
    };
    Grade {
        correct,
        last,
        feedback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_in_order() {
        assert_eq!(numbers("The answer is 48, worked out in 2 steps."), vec![48.0, 2.0]);
        assert_eq!(numbers("It costs $1,200, about 1.5 more."), vec![1200.0, 1.5]);
        assert!(numbers("no digits").is_empty());
    }

    #[test]
    fn the_last_number_is_graded() {
        let right = grade("Working it out.\n48", "48", None);
        assert!(right.correct && right.feedback.is_none(), "{right:?}");
        assert_eq!(
            grade("It lasts 1.5 hours, that is 90 minutes.", "90", Some("minutes")).correct,
            true
        );
    }

    #[test]
    fn a_stray_last_number_is_a_format_failure() {
        let g = grade("The answer is 48, worked out in 2 steps.", "48", None);
        assert!(!g.correct);
        let feedback = g.feedback.expect("feedback");
        assert!(feedback.contains("only the last number is graded"), "{feedback}");
        assert!(feedback.contains("last number is 2, not the answer 48"), "{feedback}");
    }

    #[test]
    fn another_unit_is_a_unit_failure() {
        let g = grade("The film lasts 2.25 hours.", "135", Some("minutes"));
        assert_eq!(
            g.feedback.as_deref(),
            Some("expected 135 minutes, got 2.25: the answer must be in minutes, the unit the question asks for")
        );
        let g = grade("I do not know.", "7", None);
        assert_eq!(g.feedback.as_deref(), Some("expected 7, got no number"));
    }
}
