//! Line numbers for TOML errors: the catalogue, the config and the crash signatures all name the
//! 1-based line of a problem, from a byte offset or a `toml` parser span.

/// The 1-based line of byte `offset` in `text` (newlines before `offset`, plus one). An offset past
/// the end counts the whole text.
pub fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The 1-based line where the parser error `e` on `text` starts; line 1 when it has no span.
pub fn error_line(text: &str, e: &toml::de::Error) -> usize {
    e.span().map_or(1, |s| line_at(text, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_at_counts_newlines_before_offset() {
        assert_eq!(line_at("a\nb\nc", 0), 1);
        assert_eq!(line_at("a\nb\nc", 1), 1);
        assert_eq!(line_at("a\nb\nc", 2), 2);
        assert_eq!(line_at("a\nb\nc", 4), 3);
        assert_eq!(line_at("a", 99), 1);
        assert_eq!(line_at("a\n\n", 99), 3);
    }

    #[test]
    fn error_line_names_the_bad_line() {
        // Hand count: the second `x` is on line 3.
        let dup = "x = 1\ny = 2\nx = 3\n";
        let e = match toml::from_str::<toml::Table>(dup) {
            Err(e) => e,
            Ok(t) => panic!("expected a duplicate-key error, got {t:?}"),
        };
        assert_eq!(error_line(dup, &e), 3, "{e}");
        let wrapped = "[t]\n\nk = \"unterminated\n";
        let e = match toml::from_str::<toml::Table>(wrapped) {
            Err(e) => e,
            Ok(t) => panic!("expected an unterminated-string error, got {t:?}"),
        };
        assert_eq!(error_line(wrapped, &e), 3, "{e}");
    }
}
