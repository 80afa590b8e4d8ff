//! Text from a run made safe to print: agents (and algorithms) choose much of what is shown —
//! failure reasons, logs, names, prompts. [`terminal_safe`] is the one sanitizer: no control
//! character reaches the terminal raw (an escape sequence could retitle the window, clear the
//! screen or move the cursor), and text meant for one line ([`one_line`], [`reason_line`])
//! cannot start another (a fake summary line). Also the duration format `show` and the span tree
//! use.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether text may span lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// One line: a line break is shown as `⏎`, a tab as a space.
    One,
    /// Line breaks and tabs are kept (a summary, a JSON document).
    Many,
}

/// `text` safe to write to a terminal: every control character (C0 but, with [`Lines::Many`],
/// newline and tab; DEL; C1, such as the one-byte CSI U+009B) and bidirectional override is
/// shown as the JSON escape of it (ESC as `\u001b`), which also keeps a JSON document valid and
/// unchanged in meaning; a CR before a newline goes with it.
pub fn terminal_safe(text: &str, lines: Lines) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_hidden(c) && !(lines == Lines::Many && (c == '\n' || c == '\t'));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' if lines == Lines::One => out.push('⏎'),
            '\t' if lines == Lines::One => out.push(' '),
            '\n' | '\t' => out.push(c),
            c if is_hidden(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Characters a terminal acts on, or that reorder what it shows, rather than print.
fn is_hidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` on one line (trailing blanks dropped), safe to print: see [`terminal_safe`].
pub fn one_line(text: &str) -> String {
    terminal_safe(text.trim_end(), Lines::One).into_owned()
}

/// Longest reason shown in a summary or a runner's line (the results file keeps it whole).
const SHOWN_REASON_CHARS: usize = 200;

/// Why something failed, as a summary line shows it: its runs of blanks and line breaks as one
/// space, safe to print, cut to 200 characters (then ending in `…`).
pub fn reason_line(reason: &str) -> String {
    let flat = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = terminal_safe(&flat, Lines::One);
    if flat.chars().count() <= SHOWN_REASON_CHARS {
        return flat.into_owned();
    }
    let mut cut: String = flat.chars().take(SHOWN_REASON_CHARS).collect();
    cut.push('…');
    cut
}

/// A duration for people: `0.004 s`, `1.07 s`, `42.5 s`, `3m 05s`, `2h 03m`.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "-".to_owned();
    }
    if seconds < 0.1 {
        return format!("{seconds:.3} s");
    }
    if seconds < 10.0 {
        return format!("{seconds:.2} s");
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    if whole < 3600 {
        return format!("{}m {:02}s", whole / 60, whole % 60);
    }
    format!("{}h {:02}m", whole / 3600, (whole % 3600) / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "boom\u{1b}]0;pwned\u{7}\u{1b}[2J\rback\u{9b}31m\u{8}\ncompleted in 0.01 s\u{202e}";

    #[test]
    fn no_control_character_gets_through_and_one_line_stays_one() {
        let one = one_line(HOSTILE);
        assert_eq!(
            one,
            "boom\\u001b]0;pwned\\u0007\\u001b[2J\\u000dback\\u009b31m\\u0008⏎completed in 0.01 s\\u202e"
        );
        let many = terminal_safe(HOSTILE, Lines::Many);
        assert!(many.contains("\\u0008\ncompleted"), "{many}");
        for shown in [one.as_str(), &many, &reason_line(HOSTILE)] {
            assert!(!shown.chars().any(|c| is_hidden(c) && c != '\n'), "{shown:?}");
        }
        assert!(!reason_line(HOSTILE).contains('\n'));
        assert_eq!(terminal_safe("line\r\nnext\ttab", Lines::Many), "line\nnext\ttab");
        assert!(matches!(terminal_safe("plain · text\n", Lines::Many), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_json_with_the_same_meaning() {
        let value = serde_json::json!({"reason": "a\u{9b}b\u{7f}c\u{1b}\n"});
        let text = serde_json::to_string(&value).expect("JSON");
        let safe = terminal_safe(&text, Lines::Many);
        assert!(!safe.contains('\u{9b}') && !safe.contains('\u{7f}'), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back, value);
    }

    #[test]
    fn a_long_reason_is_shown_on_one_line_and_cut() {
        assert_eq!(reason_line("line one\n  line two"), "line one line two");
        let shown = reason_line(&"x".repeat(500));
        assert_eq!(shown.chars().count(), SHOWN_REASON_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}
