//! The snapshot's problem and notice lines of the monitor: scan failures, history trouble, what
//! grew while the monitor was not running. Bounded; a passing condition (a locked database) has
//! one line that is replaced while it lasts and removed when it passes.

/// At most this many lines are kept; the oldest go first.
const MAX_LINES: usize = 50;

/// The notice lines, oldest first.
#[derive(Debug, Default)]
pub(super) struct Notices {
    lines: Vec<String>,
    /// The line of the passing condition now shown, if any.
    passing: Option<String>,
}

impl Notices {
    /// The lines, oldest first.
    pub(super) fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The line of the passing condition now shown, if any.
    pub(super) fn passing(&self) -> Option<&str> {
        self.passing.as_deref()
    }

    /// Adds a line (dropping the oldest past [`MAX_LINES`]).
    pub(super) fn push(&mut self, line: String) {
        self.lines.push(line);
        if self.lines.len() > MAX_LINES {
            self.lines.remove(0);
        }
    }

    /// Removes the lines starting with `prefix` (a condition that is over).
    pub(super) fn forget(&mut self, prefix: &str) {
        self.lines.retain(|l| !l.starts_with(prefix));
    }

    /// Shows `line` for a passing condition, in place of the previous one.
    pub(super) fn set_passing(&mut self, line: String) {
        self.clear_passing();
        self.passing = Some(line.clone());
        self.push(line);
    }

    /// The passing condition is over: removes its line.
    pub(super) fn clear_passing(&mut self) {
        if let Some(old) = self.passing.take() {
            self.lines.retain(|l| *l != old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passing_line_is_replaced_then_removed_and_the_others_stay() {
        let mut n = Notices::default();
        n.push("scan failed".into());
        n.set_passing("locked 1".into());
        n.set_passing("locked 2".into());
        assert_eq!(n.lines(), ["scan failed", "locked 2"]);
        n.clear_passing();
        assert_eq!(n.lines(), ["scan failed"]);
    }

    #[test]
    fn the_oldest_lines_go_past_the_bound() {
        let mut n = Notices::default();
        for i in 0..=MAX_LINES {
            n.push(i.to_string());
        }
        assert_eq!(n.lines().len(), MAX_LINES);
        assert_eq!(n.lines()[0], "1");
    }
}
