//! Samples of the reclaim DTOs the window gets: a bounded preview and a bounded result.

use super::*;

pub(super) fn preview() -> ReclaimPreview {
    ReclaimPreview {
        id: "0123456789abcdef0123456789abcdef".to_owned(),
        created_unix_secs: NOW,
        threshold_secs: 86_400,
        planned_items: 700_000,
        planned_bytes: 700_000 * 4096,
        planned_freeable_bytes: 700_000 * 4096 - 1024,
        producers: vec![
            PreviewProducer {
                producer: "gpuarchiver".to_owned(),
                items: 699_990,
                allocated_bytes: 699_990 * 4096,
                freeable_bytes: 699_990 * 4096 - 1024,
                oldest_age_secs: 90_000,
                managed_by: None,
            },
            PreviewProducer {
                producer: "homebrew-cache".to_owned(),
                items: 10,
                allocated_bytes: 10 * 4096,
                freeable_bytes: 10 * 4096,
                oldest_age_secs: 200_000,
                managed_by: Some("brew cleanup".to_owned()),
            },
        ],
        kept_items: 14,
        kept: every_keep_reason()
            .into_iter()
            .map(|r| KeptGroupDto {
                reason: r.kind(),
                items: 1,
                examples: vec![kept(r)],
            })
            .collect(),
        largest: vec![
            planned("/roots/temp/gpuarchiver-1", true),
            planned("/roots/temp/gpuarchiver-2", false),
        ],
    }
}

pub(super) fn result() -> ReclaimResult {
    ReclaimResult {
        deleted_items: 1,
        freed_bytes: 4096,
        kept_items: 1,
        already_gone_items: 1,
        error_count: 1,
        deleted: vec![DeletedItem {
            path: PathBuf::from("/roots/temp/gpuarchiver-1"),
            producer: "gpuarchiver".to_owned(),
            allocated_bytes: 4096,
        }],
        kept: vec![kept(KeepReason::Changed {
            what: "in use".to_owned(),
        })],
        errors: vec![ReclaimErrorEntry {
            path: PathBuf::from("/roots/temp/gpuarchiver-3"),
            message: "permission denied".to_owned(),
        }],
    }
}
