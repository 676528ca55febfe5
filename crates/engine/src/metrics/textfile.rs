//! The textfile-collector form: a one-shot scan's figures in the Prometheus text exposition format
//! (0.0.4), which node_exporter's `--collector.textfile.directory` reads from `*.prom` files, and
//! an atomic write of such a file.
//!
//! The format is the one node_exporter parses (Prometheus text, not OpenMetrics): no `# EOF` and
//! no `# UNIT` lines, and a counter's `# HELP`/`# TYPE` name its `_total` samples. The families and
//! help texts are those of `/metrics` that a scan without a monitor can fill:
//! `cachewatch_producer_allocated_bytes{producer}`, `cachewatch_producer_items{producer}` and
//! `cachewatch_root_allocated_bytes{kind,path}`. The file's age is node_exporter's own
//! `node_textfile_mtime_seconds`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::encode::{Families, PRODUCER_ALLOCATED, PRODUCER_ITEMS, ROOT_ALLOCATED};

/// A producer's totals over the scanned roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerFigures {
    /// Catalogue rule id (the `producer` label).
    pub id: String,
    /// Number of items.
    pub items: u64,
    /// Allocated bytes of its items (as `du` counts them).
    pub allocated_bytes: u64,
}

/// A scanned root's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootFigures {
    /// The root kind (the `kind` label): `temp`, `cache`, ...
    pub kind: String,
    /// The path as given (the `path` label).
    pub path: String,
    /// Allocated bytes of the whole root.
    pub allocated_bytes: u64,
}

/// What a one-shot scan measured, in the order to print.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanFigures {
    /// One per root.
    pub roots: Vec<RootFigures>,
    /// One per producer with items.
    pub producers: Vec<ProducerFigures>,
}

/// Errors of [`write_atomically`].
#[derive(Debug, thiserror::Error)]
pub enum TextfileError {
    /// The file (or its temporary sibling) cannot be written, synced or renamed.
    #[error("cannot write {path}: {source}; check that its directory exists and is writable")]
    Write {
        /// The file asked for (the temporary is beside it).
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Renders `figures` in the Prometheus text format (0.0.4), as node_exporter's textfile collector
/// reads it.
pub fn render(figures: &ScanFigures) -> String {
    let mut f = Families::default();
    let one = |id: &str| vec![("producer", id.to_owned())];
    f.push(
        PRODUCER_ALLOCATED,
        figures
            .producers
            .iter()
            .map(|p| (one(&p.id), p.allocated_bytes)),
    );
    f.push(
        PRODUCER_ITEMS,
        figures.producers.iter().map(|p| (one(&p.id), p.items)),
    );
    f.push(
        ROOT_ALLOCATED,
        figures.roots.iter().map(|r| {
            (
                vec![("kind", r.kind.clone()), ("path", r.path.clone())],
                r.allocated_bytes,
            )
        }),
    );
    f.prometheus_text()
}

/// Writes `text` to `path` atomically: a hidden temporary file in the same directory (not ending in
/// `.prom`, so the collector never reads it half written), synced, then renamed over `path`, and
/// the directory synced. A reader sees the old file or the new one, never a mix.
///
/// When `path` is a symlink (a dotfiles-managed config, a textfile dir of links), the file it
/// points to is replaced, not the link. The new file keeps the old one's permission bits. The
/// temporary is created exclusively (`O_EXCL`, which does not follow a symlink): a link planted
/// at its predictable name in a shared directory is removed, never written through.
///
/// # Errors
/// [`TextfileError::Write`] when the directory is missing or not writable, or the disk is full;
/// the temporary file is removed then.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), TextfileError> {
    let err = |source| TextfileError::Write {
        path: path.to_path_buf(),
        source,
    };
    // Replace what a symlink points to, not the link (a dangling link is replaced itself).
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(target) => {
                resolved = target;
                resolved.as_path()
            }
            Err(_) => path,
        },
        _ => path,
    };
    let old_mode = std::fs::metadata(path).ok().map(|m| m.permissions());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| err(std::io::Error::other("the path names no file")))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let create = || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
        };
        let mut file = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A stale temporary (same pid, an earlier run) or a planted link: remove it (a
                // link is removed, not its target) and create ours.
                std::fs::remove_file(&tmp)?;
                create()?
            }
            other => other?,
        };
        if let Some(mode) = &old_mode {
            file.set_permissions(mode.clone())?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        if let Err(rm) = std::fs::remove_file(&tmp) {
            if rm.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %tmp.display(), error = %rm, "cannot remove a temporary file");
            }
        }
        return Err(err(e));
    }
    // The rename is durable once the directory is synced; a directory that cannot be opened for
    // that (some filesystems) still has the new file.
    if let Ok(d) = std::fs::File::open(dir) {
        if let Err(e) = d.sync_all() {
            tracing::debug!(dir = %dir.display(), error = %e, "cannot sync the directory");
        }
    }
    Ok(())
}
