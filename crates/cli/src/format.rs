//! Human output: binary units, aligned tables, and escaping of control characters in names and
//! paths (a file name may hold a newline or terminal control codes; printed raw it would draw a
//! spoofed row). The JSON output needs none of this: serde escapes control characters.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// `s` with every control character escaped so it prints on one line and cannot move the cursor
/// or restyle the terminal: `\n`, `\r`, `\t`, `\e` (ESC), other C0 and DEL as `\xNN`, C1 and
/// bidirectional overrides as `\u{NNNN}`. Borrowed when there is nothing to escape.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A path for human output: [`escape`] of its text, with every byte that is not UTF-8 written
/// as `\xNN` (lossless, and as wide as it prints; a lossy `\u{fffd}` hides which byte it was).
pub fn path(p: &Path) -> String {
    let mut out = String::new();
    for chunk in p.as_os_str().as_encoded_bytes().utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// The width `s` takes on a terminal, in columns: East Asian wide characters count 2, combining
/// marks 0 (`unicode-width`). Cells are measured after escaping, as they print.
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A count with thousands separators, as the app writes it: `20003` -> `20,003`
/// ([`cachewatch::api::units::format_count`]).
pub fn count(n: u64) -> String {
    cachewatch::api::units::format_count(n)
}

/// `n` bytes in binary units as every front end writes them: `0 B`, `999 B`, `1.5 KiB`,
/// `105 MiB` ([`cachewatch::api::units::format_bytes`]).
pub fn bytes(n: u64) -> String {
    cachewatch::api::units::format_bytes(n.into())
}

/// An age in seconds as the engine writes every duration: `40 s`, `12 min`, `5 h 2 min`, `3 d`
/// ([`cachewatch::api::units::format_duration`]).
pub fn age(secs: u64) -> String {
    cachewatch::api::units::format_duration(secs)
}

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// A table printed with aligned columns, two spaces apart; the last column is not padded.
#[derive(Debug)]
pub struct Table {
    header: Vec<&'static str>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles and alignments.
    pub fn new(columns: &[(&'static str, Align)]) -> Table {
        Table {
            header: columns.iter().map(|c| c.0).collect(),
            align: columns.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as columns). Control characters in the cells are escaped
    /// ([`escape`]), so a name can never print as more than its one cell.
    pub fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .map(|c| match escape(&c) {
                Cow::Borrowed(_) => c,
                Cow::Owned(e) => e,
            })
            .collect();
        self.rows.push(cells);
    }

    /// Writes the header and the rows.
    ///
    /// # Errors
    /// The write error.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let header: Vec<String> = self.header.iter().map(|h| (*h).to_owned()).collect();
        let all = std::iter::once(&header).chain(self.rows.iter());
        let mut widths = vec![0usize; self.header.len()];
        for row in all.clone() {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        for row in all {
            let last = row.len().saturating_sub(1);
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths[i].saturating_sub(width(cell));
                match self.align[i] {
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(cell);
                    }
                    Align::Left => {
                        line.push_str(cell);
                        if i != last {
                            line.push_str(&" ".repeat(pad));
                        }
                    }
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn counts_group_thousands_like_the_app() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(20003), "20,003");
        assert_eq!(count(699_300), "699,300");
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn bytes_use_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024 + 512 * 1024 * 1024), "3.5 GiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn ages_read_as_the_engine_writes_durations() {
        assert_eq!(age(0), "0 s");
        assert_eq!(age(59), "59 s");
        assert_eq!(age(60), "1 min");
        assert_eq!(age(3_599), "59 min 59 s");
        assert_eq!(age(7_200), "2 h");
        assert_eq!(age(3 * 86_400 + 5), "3 d");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape("plain name.ips"), "plain name.ips");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\nb\rc\td\u{1b}[2Ke\u{7}f\u{7f}g\u{85}h\u{202e}i"),
            "a\\nb\\rc\\td\\e[2Ke\\x07f\\x7fg\\u{0085}h\\u{202e}i"
        );
        assert_eq!(path(Path::new("/t/x\ny")), "/t/x\\ny");
    }

    #[test]
    fn table_cells_cannot_add_rows() {
        let mut t = Table::new(&[("NAME", Align::Left), ("SIZE", Align::Right)]);
        t.row(vec!["evil\n\u{1b}[2K\rfake  9 GiB".into(), "1 B".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    }

    #[test]
    fn non_utf8_bytes_print_as_hex_escapes() {
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/t/bad\xff\xfename\n"));
        assert_eq!(path(p), "/t/bad\\xff\\xfename\\n");
    }

    #[test]
    fn table_widths_are_the_printed_widths_of_escaped_and_wide_names() {
        let mut t = Table::new(&[("NAME", Align::Left), ("SIZE", Align::Right)]);
        t.row(vec!["wide-中文".into(), "1 B".into()]);
        t.row(vec!["bad\\xff\\xfe".into(), "2 B".into()]);
        t.row(vec!["tab\t".into(), "3 B".into()]);
        t.row(vec!["e\u{301}".into(), "4 B".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Every SIZE ends in the same terminal column: the rows are as wide as the header's.
        let widths: Vec<usize> = text.lines().map(width).collect();
        assert_eq!(widths, [17, 17, 17, 17, 17], "{text}");
        assert!(text.contains("bad\\xff\\xfe   2 B"), "{text}");
    }

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(&[("NAME", Align::Left), ("SIZE", Align::Right)]);
        t.row(vec!["a".into(), "1.0 KiB".into()]);
        t.row(vec!["longer".into(), "3 B".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "NAME       SIZE\na       1.0 KiB\nlonger      3 B\n");
    }
}
