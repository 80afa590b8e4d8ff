//! Text for the terminal, as `agl-host runs` and `show` print it: aligned tables, lines clipped
//! to the terminal's width and made safe to print, text folded onto one line, and the small formats (UTC times,
//! durations, rewards). Formatting only: nothing here reads a store.

use std::time::{Duration, UNIX_EPOCH};

/// The width lines are clipped to: `$COLUMNS` when it is a number (shells set it for a
/// terminal), else 100.
pub fn terminal_width() -> usize {
    width_from(std::env::var("COLUMNS").ok().as_deref())
}

fn width_from(columns: Option<&str>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w >= 20)
        .unwrap_or(100)
}

/// `line` on one line and safe to print ([`one_line`]: every line `runs` and `show` print goes
/// through here), cut to `width` characters, the last one `…` when something was cut.
pub fn clip_line(line: &str, width: usize) -> String {
    let line = one_line(line);
    if line.chars().count() <= width {
        return line;
    }
    let mut out: String = line.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `text` on one line, safe to print: line breaks shown as `⏎`, tabs as spaces, other control
/// characters escaped (`output::terminal_safe`).
pub use crate::output::one_line;
pub use agl_runs::text::duration;

/// Seconds since the Unix epoch as `2026-11-24 21:06:20 UTC`.
pub fn utc(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "-".to_owned();
    }
    let at = UNIX_EPOCH + Duration::from_secs_f64(seconds);
    // "2026-11-24T21:06:20Z"
    let stamp = humantime::format_rfc3339_seconds(at).to_string();
    format!("{} UTC", stamp.trim_end_matches('Z').replacen('T', " ", 1))
}

/// A reward or score with four decimals, `-` when there is none.
pub fn score(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.4}"))
}

/// How a column's cells line up.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

enum Row {
    Cells(Vec<String>),
    /// The first cell in its column, then free text over the others.
    Note(String, String),
}

/// A table printed as aligned columns under a header line, every line clipped to a width.
pub struct Table {
    headers: Vec<(&'static str, Align)>,
    rows: Vec<Row>,
}

impl Table {
    pub fn new(headers: &[(&'static str, Align)]) -> Self {
        Self {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    /// One row; missing cells are empty, extra ones dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(Row::Cells(cells));
    }

    /// A row that holds its first cell and then `text` across the other columns (e.g. why a
    /// file could not be read).
    pub fn note(&mut self, first: String, text: String) {
        self.rows.push(Row::Note(first, text));
    }

    /// The table, each line starting with `indent` and clipped to `width` characters.
    pub fn render(&self, indent: &str, width: usize) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|(h, _)| h.chars().count()).collect();
        for row in &self.rows {
            match row {
                Row::Cells(cells) => {
                    for (w, cell) in widths.iter_mut().zip(cells) {
                        *w = (*w).max(cell.chars().count());
                    }
                }
                Row::Note(first, _) => {
                    if let Some(w) = widths.first_mut() {
                        *w = (*w).max(first.chars().count());
                    }
                }
            }
        }
        let mut out = String::new();
        let header: Vec<String> = self.headers.iter().map(|(h, _)| (*h).to_owned()).collect();
        for row in std::iter::once(&header)
            .map(|h| self.line(h, &widths))
            .chain(self.rows.iter().map(|row| match row {
                Row::Cells(cells) => self.line(cells, &widths),
                Row::Note(first, text) => {
                    let pad = widths.first().copied().unwrap_or(0);
                    format!("{first:<pad$}  {text}")
                }
            }))
        {
            out.push_str(&clip_line(&format!("{indent}{}", row.trim_end()), width));
            out.push('\n');
        }
        out
    }

    fn line(&self, cells: &[String], widths: &[usize]) -> String {
        let mut line = String::new();
        for (i, ((_, align), width)) in self.headers.iter().zip(widths).enumerate() {
            let cell = cells.get(i).map_or("", String::as_str);
            if i > 0 {
                line.push_str("  ");
            }
            match align {
                Align::Left => line.push_str(&format!("{cell:<width$}")),
                Align::Right => line.push_str(&format!("{cell:>width$}")),
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_lines_are_clipped() {
        let mut table = Table::new(&[("id", Align::Left), ("reward", Align::Right), ("why", Align::Left)]);
        table.row(vec!["ro-1".into(), "1.0000".into(), String::new()]);
        table.row(vec!["ro-22".into(), "-".into(), "the attempt timed out".into()]);
        table.note("junk.db".into(), "unreadable: not a database".into());
        let text = table.render("  ", 30);
        let lines: Vec<&str> = text.lines().collect();
        // The note's first cell widens its column; the rest of the note ignores the columns.
        assert_eq!(lines[0], "  id       reward  why");
        assert_eq!(lines[1], "  ro-1     1.0000");
        assert_eq!(lines[2], "  ro-22         -  the attemp…");
        assert_eq!(lines[3], "  junk.db  unreadable: not a …");
        assert!(lines.iter().all(|l| l.chars().count() <= 30));
    }

    #[test]
    fn columns_come_from_the_environment_or_default_to_100() {
        assert_eq!(width_from(Some("132")), 132);
        assert_eq!(width_from(Some("wide")), 100);
        assert_eq!(width_from(Some("3")), 100);
        assert_eq!(width_from(None), 100);
    }

    #[test]
    fn text_goes_on_one_line_and_times_read_as_utc() {
        assert_eq!(one_line("a\nb\tc\n"), "a⏎b c");
        assert_eq!(utc(1_795_813_512.4), "2026-11-27 21:05:12 UTC");
        assert_eq!(duration(0.0042), "0.004 s");
        assert_eq!(duration(1.071), "1.07 s");
        assert_eq!(duration(185.0), "3m 05s");
        assert_eq!(duration(7380.0), "2h 03m");
        assert_eq!(score(None), "-");
        assert_eq!(score(Some(0.67578)), "0.6758");
    }
}
