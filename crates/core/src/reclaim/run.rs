//! [`execute`]: a whole plan in one call, through an [`Executor`].

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{AuditRecord, ExecuteOptions, Executor, ReclaimError, ReclaimPlan, ReclaimReport};
use crate::catalogue::Catalogue;
use crate::process::ProcessProbe;

/// Executes `plan` with [`ExecuteOptions::default`]: batches of [`DEFAULT_BATCH_SIZE`](super::DEFAULT_BATCH_SIZE) items,
/// `audit` called once per item attempted (on the calling thread, in plan order, after its batch).
///
/// The re-check, per item: the path is absolute, plain and strictly inside its root; it is not
/// and does not hold any of the plan's roots nor any protected path (the plan's
/// `policy.protected` and the user's home dir read again now); the rule still exists and allows
/// deletion. The item is then reached from its root's fd (opened once, never through a symlink)
/// one dir at a time, never following a symlink nor crossing a mount; its `lstat` through its
/// parent's fd gives the planned device, inode, birth time and symlink-ness; the owner pid is
/// still not a live owner, the rule's processes still do not run, and no open or mapped file lies
/// under it (the open files re-read before each batch). One walk through the item's own fd finds
/// no mount inside (else [`KeepReason::HoldsMount`](super::KeepReason::HoldsMount)), nothing
/// modified after the plan's newest mtime, and an age still at least max(threshold, rule floor).
/// Then its contents go with `unlinkat` relative to each parent fd, and the item itself relative
/// to its parent's fd once its name still names the same inode (a symlink: the link goes, the
/// target stays). `NotFound` at any step means already gone (`already_gone`, audit outcome
/// `already-gone`, never `deleted`).
///
/// Freed bytes are the re-measured allocated bytes of what was deleted. An inode with several
/// links counts only when all its links were deleted within this execute (the links met in
/// deleted items reach the highest `st_nlink` seen), and then once, in the first deleted item
/// (plan order) that held one of them; a file hard-linked from outside the deleted items frees
/// nothing.
///
/// A plan refused whole ([`Executor::new`]'s errors: id mismatch, a root that cannot be opened,
/// another reclaim holding a root) deletes nothing: the report carries that one error with an
/// empty path (the root's path for a root error) and no audit call is made.
pub fn execute(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    audit: &mut dyn FnMut(&AuditRecord),
) -> ReclaimReport {
    let mut exec = match Executor::new(plan, catalogue, probe, now, ExecuteOptions::default()) {
        Ok(exec) => exec,
        Err(e) => {
            let path = match &e {
                ReclaimError::OpenRoot { root, .. }
                | ReclaimError::Busy { root, .. }
                | ReclaimError::Lock { root, .. } => root.clone(),
                _ => PathBuf::new(),
            };
            let mut report = ReclaimReport::default();
            report.errors.push(e.entry(Path::new(&path)));
            return report;
        }
    };
    while let Some(batch) = exec.next_batch() {
        for rec in exec.run_batch(batch).records {
            audit(&rec);
        }
    }
    exec.finish()
}
