//! The textfile form: Prometheus text (0.0.4) (its write: `safe_file`'s tests).

use super::super::textfile::*;

fn figures() -> ScanFigures {
    ScanFigures {
        roots: vec![RootFigures {
            kind: "temp".into(),
            path: "/tmp/a\"b".into(),
            allocated_bytes: 12288,
        }],
        producers: vec![ProducerFigures {
            id: "metal-gpuarchiver".into(),
            items: 3,
            allocated_bytes: 12288,
        }],
    }
}

#[test]
fn the_textfile_form_is_prometheus_text_without_unit_or_eof_lines() {
    let expected = "\
# HELP cachewatch_producer_allocated_bytes Allocated bytes of a producer's items (as du counts them).
# TYPE cachewatch_producer_allocated_bytes gauge
cachewatch_producer_allocated_bytes{producer=\"metal-gpuarchiver\"} 12288
# HELP cachewatch_producer_items Number of a producer's items.
# TYPE cachewatch_producer_items gauge
cachewatch_producer_items{producer=\"metal-gpuarchiver\"} 3
# HELP cachewatch_root_allocated_bytes Allocated bytes of a watched root.
# TYPE cachewatch_root_allocated_bytes gauge
cachewatch_root_allocated_bytes{kind=\"temp\",path=\"/tmp/a\\\"b\"} 12288
";
    assert_eq!(render(&figures()), expected);
}
