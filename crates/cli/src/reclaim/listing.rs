//! A table whose rows are read twice from a source instead of held: once for the column widths,
//! once to print, so `--list` of 700k items prints like [`crate::format::Table`] in flat memory.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::format::{escape, Align};

/// Writes the header and the rows of `rows()` (called twice, giving the same rows each time) as
/// [`crate::format::Table`] does: columns two spaces apart, the last one not padded, control
/// characters escaped.
///
/// # Errors
/// A write error, or an error of the row source.
pub fn write<I>(
    columns: &[(&'static str, Align)],
    rows: impl Fn() -> I,
    out: &mut dyn Write,
) -> io::Result<()>
where
    I: Iterator<Item = io::Result<Vec<String>>>,
{
    let header: Vec<String> = columns.iter().map(|c| c.0.to_owned()).collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows() {
        for (w, cell) in widths.iter_mut().zip(&row?) {
            *w = (*w).max(escape(cell).chars().count());
        }
    }
    line(&header, columns, &widths, out)?;
    for row in rows() {
        line(&row?, columns, &widths, out)?;
    }
    Ok(())
}

fn line(
    row: &[String],
    columns: &[(&'static str, Align)],
    widths: &[usize],
    out: &mut dyn Write,
) -> io::Result<()> {
    let last = row.len().saturating_sub(1);
    let mut text = String::new();
    for (i, cell) in row.iter().enumerate() {
        let cell: Cow<'_, str> = escape(cell);
        if i > 0 {
            text.push_str("  ");
        }
        let pad = widths[i].saturating_sub(cell.chars().count());
        match columns[i].1 {
            Align::Right => {
                text.push_str(&" ".repeat(pad));
                text.push_str(&cell);
            }
            Align::Left => {
                text.push_str(&cell);
                if i != last {
                    text.push_str(&" ".repeat(pad));
                }
            }
        }
    }
    writeln!(out, "{}", text.trim_end())
}
