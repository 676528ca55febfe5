//! `impl` [`Watching`]: blocking jobs over the roots' states (a plan, the reclaim figures, a poll).
//! The states move into a job on the blocking pool and back, so no item is copied, and a panic in
//! the job is caught, so the states come back whatever the job did. State: the roots' states.

use tokio::task::JoinError;

use super::{Outside, Watching};
use crate::watch::live::RootState;

/// What a blocking job gives back: the state it took and its result, or the panic it raised.
/// `Err` only when the job could not run to its end (the runtime shutting down): the state is
/// then lost.
pub(in crate::monitor::actor) type Job<S, T> = Result<(S, std::thread::Result<T>), JoinError>;

/// Runs `f` over `state` on the blocking pool, catching a panic, then (with `release_memory`)
/// returns the pages the job freed to the OS ([`crate::platform::release_free_memory`]).
pub(in crate::monitor::actor) async fn blocking<S, T>(
    mut state: S,
    release_memory: bool,
    f: impl FnOnce(&mut S) -> T + Send + 'static,
) -> Job<S, T>
where
    S: Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut state)));
        if release_memory {
            crate::platform::release_free_memory();
        }
        (state, out)
    })
    .await
}

impl Watching {
    /// Runs `f` over every root's state on the blocking pool ([`blocking`]), then returns the
    /// pages it freed to the OS. The states are put back; when the job could not run to its end
    /// they are lost, so the roots start over ([`Watching::restart_roots`]) and the join error is
    /// returned.
    pub(in crate::monitor::actor) async fn with_roots<T: Send + 'static>(
        &mut self,
        out: &mut Outside<'_>,
        f: impl FnOnce(&[RootState]) -> T + Send + 'static,
    ) -> Result<std::thread::Result<T>, JoinError> {
        let roots = std::mem::take(&mut self.roots);
        match blocking(roots, true, move |roots| f(roots)).await {
            Ok((roots, res)) => {
                self.roots = roots;
                Ok(res)
            }
            Err(e) => {
                self.restart_roots(out).await;
                Err(e)
            }
        }
    }

    /// Runs `f` over root `i`'s state on the blocking pool ([`blocking`]), then returns the pages
    /// it freed to the OS (its one caller, a poll, lists and stats every dir of the root, every
    /// minute); the state is put back.
    /// When the job could not run to its end, the root is left empty (the caller rescans it) and
    /// the join error is returned.
    pub(super) async fn with_root<T: Send + 'static>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut RootState) -> T + Send + 'static,
    ) -> Result<std::thread::Result<T>, JoinError> {
        let empty = RootState::new(self.roots[i].root.clone());
        let st = std::mem::replace(&mut self.roots[i], empty);
        let (st, out) = blocking(st, true, f).await?;
        self.roots[i] = st;
        Ok(out)
    }

    /// The roots' states were lost with a blocking job (only when the runtime shuts down):
    /// start over.
    async fn restart_roots(&mut self, out: &mut Outside<'_>) {
        tracing::error!("a blocking job over the inventory failed; rescanning");
        self.roots = out.opts.roots.iter().cloned().map(RootState::new).collect();
        for i in 0..self.roots.len() {
            self.rescan_root(i, out).await;
        }
    }
}
