use super::*;
use crate::inventory::Captures;
use crate::roots::RootKind;

fn item(path: &Path, producer: Option<&str>, allocated_bytes: u64, files: u64) -> Item {
    Item {
        path: path.to_path_buf(),
        producer: producer.map(str::to_owned),
        captures: Captures::default(),
        measure: Measure {
            allocated_bytes,
            apparent_bytes: allocated_bytes / 2,
            freeable_bytes: allocated_bytes,
            files,
            dirs: 1,
            newest_mtime: None,
            birth_time: None,
        },
        is_symlink: false,
        dev: 0,
        ino: 0,
    }
}

#[test]
fn totals_follow_adds_replacements_and_removals() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    let a = root.canonical.join("g/a");
    let b = root.canonical.join("g/b");
    assert_eq!(st.apply(&a, Some(item(&a, Some("p"), 4096, 2))), 4096);
    assert_eq!(st.apply(&b, Some(item(&b, Some("p"), 8192, 3))), 8192);
    assert_eq!(st.apply(&a, Some(item(&a, Some("p"), 12288, 5))), 8192);
    assert_eq!(st.total.allocated_bytes, 12288 + 8192);
    assert_eq!(st.total.files, 8);
    // Removing a dir drops every item below it.
    assert_eq!(st.apply(&root.canonical.join("g"), None), -(12288 + 8192));
    assert_eq!(st.item_count(), 0);
    assert!(st.producers().is_empty());
    assert_eq!(st.total, Measure::default());
}

/// Items, allocated bytes and the largest items of one group.
type Recount = (u64, u64, Vec<(u64, PathBuf)>);

/// Totals and largest-item lists kept by deltas equal those recomputed from the items.
#[test]
fn groups_follow_updates_like_a_recount() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    // A fixed pseudo-random sequence of sets, shrinks, moves between producers and removals.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for step in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = x % 40;
        let path = root.canonical.join(format!("g/i{n:02}"));
        let producer = ["p", "q", "none"][(x >> 8) as usize % 3];
        let producer = (producer != "none").then_some(producer);
        if (x >> 16) % 5 == 0 {
            st.apply(&path, None);
        } else {
            let bytes = ((x >> 20) % 64) * 4096;
            st.apply(&path, Some(item(&path, producer, bytes, 1)));
        }
        st.refresh_tops();
        let mut want: BTreeMap<Option<String>, Recount> = BTreeMap::new();
        for (rel, e) in st.items() {
            let w = want.entry(e.producer.clone()).or_default();
            w.0 += 1;
            w.1 += e.measure.allocated_bytes;
            w.2.push((e.measure.allocated_bytes, rel));
        }
        let mut got: BTreeMap<Option<String>, Recount> = st
            .producers()
            .iter()
            .map(|(id, g)| (Some(id.to_string()), g))
            .chain((st.unattributed().totals.items > 0).then_some((None, st.unattributed())))
            .map(|(id, g)| {
                let top = g.top.items.iter().map(|(b, p)| (*b, p.to_path_buf()));
                (
                    id,
                    (
                        g.totals.items,
                        g.totals.measure.allocated_bytes,
                        top.collect(),
                    ),
                )
            })
            .collect();
        for (id, w) in &mut want {
            w.2.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            w.2.truncate(if id.is_some() {
                TOP_ITEMS
            } else {
                TOP_UNATTRIBUTED
            });
        }
        got.retain(|_, g| g.0 > 0);
        assert_eq!(got, want, "after step {step}");
        let sum: u64 = st
            .items()
            .iter()
            .map(|(_, e)| e.measure.allocated_bytes)
            .sum();
        assert_eq!(st.total.allocated_bytes, sum, "after step {step}");
    }
}
