//! Build script: generates the Tauri context and an app manifest listing the custom commands, so
//! each command must be allowed explicitly by a capability (`capabilities/main.json`).

fn main() {
    let manifest = tauri_build::AppManifest::new().commands(&[
        "get_snapshot",
        "plan_reclaim",
        "execute_reclaim",
        "set_paused",
        "set_threshold",
        "rescan",
        "get_settings",
        "set_settings",
        "open_evidence",
    ]);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        // build scripts report failures by panicking; the message says what is wrong
        panic!("tauri-build failed: {e:#}");
    }
}
