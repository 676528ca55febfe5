//! Legacy kernel panic text: a report that is the panic log itself, starting with
//! `panic(cpu N caller 0x...): <reason>` (older `.panic` files, and panic logs saved as text; an
//! `Anonymous UUID:` and a date line may come first), followed by lines such as `Debugger
//! message:`, `OS version:` or `Mac OS version:`, `Kernel version:` and the backtrace.

use super::report::{CrashReport, ReportKind};

/// How many leading lines may come before the `panic(cpu` line.
const HEAD_LINES: usize = 20;

/// True when one of the first lines of `text` starts with `panic(cpu `.
pub(super) fn looks_like_panic(text: &str) -> bool {
    panic_line(text).is_some()
}

fn panic_line(text: &str) -> Option<&str> {
    text.lines()
        .take(HEAD_LINES)
        .map(str::trim)
        .find(|l| l.starts_with("panic(cpu "))
}

/// Fills `report` as a kernel panic: kind [`ReportKind::Panic`], process `kernel`, the panic line
/// as its message, the OS version when a line gives it (the time stays the file's mtime).
pub(super) fn fill(report: &mut CrashReport, text: &str) {
    report.kind = ReportKind::Panic;
    report.process = "kernel".to_owned();
    if let Some(line) = panic_line(text) {
        report.messages.push(line.to_owned());
    }
    for line in text.lines().take(200).map(str::trim) {
        let version = ["OS version:", "Mac OS version:"]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .map(str::trim)
            .filter(|v| !v.is_empty());
        if let Some(v) = version {
            report.os_version = Some(v.to_owned());
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::UNIX_EPOCH;

    #[test]
    fn a_panic_log_is_a_kernel_panic_with_its_reason_and_os_version() {
        let text = "panic(cpu 4 caller 0xfffffe0028b1c7a8): DCP DART SError \n\
                    Debugger message: panic\nMemory ID: 0x6\nOS release type: User\n\
                    OS version: 21E258\nKernel version: Darwin Kernel Version 21.4.0\n";
        assert!(looks_like_panic(text));
        let mut r = CrashReport::new(
            Path::new("/r/Kernel.panic"),
            1,
            ReportKind::Other,
            UNIX_EPOCH,
        );
        fill(&mut r, text);
        assert_eq!(r.kind, ReportKind::Panic);
        assert_eq!(r.process, "kernel");
        assert_eq!(r.os_version.as_deref(), Some("21E258"));
        assert!(r.messages[0].starts_with("panic(cpu 4 caller 0x"));
        assert!(!looks_like_panic("Process: x\nException Type: EXC_CRASH\n"));
    }
}
