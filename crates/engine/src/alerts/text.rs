//! The words of the alerts: short, naming the producer, the amount, the rate and what to do.

use std::time::Duration;

/// The `--older-than` to suggest for a producer: at least an hour, and at least its rule's floor.
pub(crate) fn suggested_older_than(min_age_secs: u64) -> String {
    let secs = min_age_secs.max(3600);
    humantime::format_duration(Duration::from_secs(secs.div_ceil(3600) * 3600)).to_string()
}

/// `message` as the app shows it: without the sentences that tell a terminal user which
/// `cachewatch` command to run (the app offers the action as a button instead). Each such
/// sentence starts at " Reclaim: cachewatch " or " See `cachewatch " and ends at its full stop.
pub fn for_app(message: &str) -> String {
    let mut out = message.to_owned();
    for start in [" Reclaim: cachewatch ", " See `cachewatch "] {
        while let Some(i) = out.find(start) {
            let end = out[i + 1..]
                .find(". ")
                .map_or(out.len(), |j| i + 1 + j + 1)
                .min(out.len());
            out.replace_range(i..end, "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::for_app;

    /// Issue 12 §7: notifications told a GUI user to run `cachewatch reclaim …`.
    #[test]
    fn the_app_text_has_no_command_to_run() {
        let m = "Metal gpuarchiver grew 105.0 MiB and 40 items in 3m (2.0 GiB/h); now 1.1 GiB in \
                 400 items. Reclaim: cachewatch reclaim --producer metal-gpuarchiver --older-than 1h. \
                 Upstream: https://example.org/1";
        assert_eq!(
            for_app(m),
            "Metal gpuarchiver grew 105.0 MiB and 40 items in 3m (2.0 GiB/h); now 1.1 GiB in 400 \
             items. Upstream: https://example.org/1"
        );
        let t =
            "The watched dirs hold 9.0 GiB, above the limit of 8.0 GiB. See `cachewatch status` \
                 for the largest producers and `cachewatch reclaim` to free space.";
        assert_eq!(
            for_app(t),
            "The watched dirs hold 9.0 GiB, above the limit of 8.0 GiB."
        );
        assert_eq!(for_app("Free space is low."), "Free space is low.");
    }
}
