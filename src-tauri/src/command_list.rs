// The one list of the window's IPC commands, as `command_list!(...)`. `lib.rs` expands it into the
// invoke handler, `build.rs` into the app manifest and the capability `capabilities/main.json`
// (written from this list: edit here, never there), and the test `bindings.rs` into the UI's
// `ui/src/bindings/commands.ts` (a new command needs its signature there too; the test says so).
command_list!(
    get_snapshot,
    plan_reclaim,
    estimate_reclaim,
    execute_reclaim,
    set_paused,
    set_threshold,
    read_threshold,
    rescan,
    get_settings,
    set_settings,
    open_evidence,
    producer_history,
    group_history,
    reclaim_history,
    get_ui_state,
    set_ui_view,
    dismiss_reclaim,
    window_shown,
    preview_group_rule,
    add_group_rule,
    ignore_shape,
    report_draft,
)
