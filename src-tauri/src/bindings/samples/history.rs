//! Samples of the history DTOs: a producer's and a group's chart data and past reclaim runs.

pub(super) fn group_history() -> cachewatch::api::history::GroupHistory {
    use cachewatch::api::history::{ChartSample, GroupHistory};
    GroupHistory {
        key: "2f726f6f74732f74656d70006600".to_owned(),
        from_unix_secs: 1_700_000_000 - 86_400,
        to_unix_secs: 1_700_000_000,
        samples: vec![
            ChartSample {
                time_unix_secs: 1_699_990_000,
                allocated_bytes: 20 << 20,
                items: 20,
            },
            ChartSample {
                time_unix_secs: 1_699_999_000,
                allocated_bytes: 44 << 20,
                items: 44,
            },
        ],
    }
}

pub(super) fn producer_history() -> cachewatch::api::history::ProducerHistory {
    use cachewatch::api::history::{ChartReclaim, ChartSample, ProducerHistory};
    let sample = |t: u64, bytes: u64| ChartSample {
        time_unix_secs: t,
        allocated_bytes: bytes,
        items: bytes >> 20,
    };
    ProducerHistory {
        producer: "metal-gpuarchiver".to_owned(),
        from_unix_secs: 1_700_000_000 - 86_400,
        to_unix_secs: 1_700_000_000,
        samples: vec![
            sample(1_699_990_000, 300 << 20),
            sample(1_699_999_000, 40 << 20),
        ],
        reclaims: vec![
            ChartReclaim {
                time_unix_secs: 1_699_995_000,
                items: 260,
                bytes: 260 << 20,
                rule: None,
            },
            ChartReclaim {
                time_unix_secs: 1_699_998_000,
                items: 3,
                bytes: 3 << 20,
                rule: Some("metal-daily".to_owned()),
            },
        ],
    }
}

pub(super) fn reclaim_run(by_rule: bool) -> cachewatch::history::ReclaimRun {
    use cachewatch::history::{ProducerFreed, ReclaimRun};
    ReclaimRun {
        started_unix_secs: 1_699_995_000,
        finished_unix_secs: 1_699_995_004,
        rule: by_rule.then(|| "metal-daily".to_owned()),
        deleted_items: 260,
        freed_bytes: 260 << 20,
        already_gone: 1,
        kept: [("in-use".to_owned(), 2)].into_iter().collect(),
        errors: u64::from(by_rule),
        first_error: by_rule.then(|| "permission denied".to_owned()),
        by_producer: [(
            "metal-gpuarchiver".to_owned(),
            ProducerFreed {
                items: 260,
                bytes: 260 << 20,
            },
        )]
        .into_iter()
        .collect(),
    }
}
