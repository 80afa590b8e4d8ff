//! Text cut to size: what every layer does to a string a guest or a client chose the length of.

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_cuts_on_a_char_boundary_and_says_so() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééé", 3), "é… [4 more bytes]");
    }
}
