use std::path::PathBuf;

use super::{KeepCode, KeepReason};

/// One reason of every variant.
fn every_reason() -> Vec<KeepReason> {
    let p = || PathBuf::from("/t/x");
    vec![
        KeepReason::TooYoung {
            age_secs: 1,
            needed_secs: 2,
        },
        KeepReason::OwnerAlive { pid: 1 },
        KeepReason::InUse { pid: 1, path: p() },
        KeepReason::AppRunning { name: "a".into() },
        KeepReason::Never,
        KeepReason::Manual,
        KeepReason::Structure,
        KeepReason::Changed {
            what: "inode".into(),
        },
        KeepReason::UnknownProducer,
        KeepReason::HoldsRoot { root: p() },
        KeepReason::HoldsMount { path: p() },
        KeepReason::HoldsProtected { path: p() },
        KeepReason::NewestCloneOfRunningApp { app: "a".into() },
        KeepReason::NewestVersion {
            version: "1".into(),
        },
        KeepReason::StagedUpdate {
            staged: None,
            installed: None,
        },
        KeepReason::Unreadable { path: p() },
        KeepReason::NotDeletable { path: p() },
        KeepReason::NotChecked {
            path: p(),
            error: "Too many open files (os error 24)".into(),
        },
    ]
}

#[test]
fn a_reason_code_is_the_reason_word_serde_writes() {
    for r in every_reason() {
        let json = serde_json::to_value(&r).expect("a reason serializes");
        assert_eq!(json["reason"].as_str(), Some(r.code()), "{r:?}");
        // The kind alone serializes to the same word (a kept group's `reason`).
        let kind = serde_json::to_value(r.kind()).expect("a code serializes");
        assert_eq!(kind, json["reason"], "{r:?}");
    }
    let mut kinds: Vec<KeepCode> = every_reason().iter().map(KeepReason::kind).collect();
    kinds.dedup();
    assert_eq!(kinds, KeepCode::ALL, "one reason of every kind, in order");
    for c in KeepCode::ALL {
        assert_eq!(KeepCode::parse(c.as_str()), Some(c));
    }
}
