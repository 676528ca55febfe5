// The shapes the engine sends over IPC. Sizes are bytes, times Unix seconds, durations seconds:
// the unit is in every name, as in the Rust structs. Rust `u64`/`i64` arrive as JS numbers.

// ---- Mirrors `src/snapshot.rs` -------------------------------------------------------------

/** `snapshot::MonitorState` (kebab-case). */
export type MonitorState = 'scanning' | 'watching' | 'paused';

/** `snapshot::WatchMode` (kebab-case). */
export type WatchMode = 'events' | 'polling' | 'off';

/** `snapshot::ScanProgress`. */
/** snapshot.rs `ObservedGrowth`: the change over the span the history observed, reclaims out. */
export interface ObservedGrowth {
  bytes: number;
  items: number;
  span_secs: number;
}

export interface ScanProgress {
  roots_done: number;
  roots_total: number;
  entries_done?: number;
}

/** `snapshot::RootDto`. */
export interface RootDto {
  kind: string;
  path: string;
  allocated_bytes: number;
  apparent_bytes: number;
  items: number;
  free_bytes: number | null;
  volume_bytes: number | null;
  /** Mount point of the root's volume; `null` when unknown. */
  mount: string | null;
  watch_mode: WatchMode;
  watch_error: string | null;
  unreadable: number;
  /** Full rescans since the monitor started, the first scan excluded. */
  rescans: number;
}

/** `snapshot::ItemDto`. */
export interface ItemDto {
  path: string;
  allocated_bytes: number;
  age_secs: number;
}

/** `snapshot::ProducerDto`. */
export interface ProducerDto {
  id: string;
  name: string;
  kind: string;
  reclaim: string;
  allocated_bytes: number;
  apparent_bytes: number;
  items: number;
  files: number;
  growth_bytes_per_hour: number | null;
  growth_bytes_per_day: number | null;
  growth_items_per_day: number | null;
  growth?: ObservedGrowth | null;
  orphan_bytes: number;
  reclaimable_bytes: number;
  reclaimable_items: number;
  evidence: string[];
  notes: string;
  top_items: ItemDto[];
  /** `[unix_secs, allocated_bytes]`, oldest first, last 7 days. */
  history: [number, number][];
}

/** `snapshot::UnattributedDto`. */
export interface UnattributedDto {
  path: string;
  root_kind: string;
  allocated_bytes: number;
  apparent_bytes: number;
}

/** `snapshot::AlertDto`. */
export interface AlertDto {
  id: number;
  time_unix_secs: number;
  rule: string;
  producer: string | null;
  title: string;
  message: string;
}

// ---- Mirrors `src/crash.rs` ----------------------------------------------------------------

/** `crash::CrashGroupDto`: crash reports of one process that show one signature. */
export interface CrashGroupDto {
  /** The process name. */
  process: string;
  /** The signature id (`coreai-ndarray-allocation-cap`, `repeated-crash`, ...). */
  signature: string;
  /** The signature's title. */
  title: string;
  /** Number of reports. */
  count: number;
  first_unix_secs: number;
  last_unix_secs: number;
  /** Apparent bytes of the report files. */
  report_bytes: number;
}

/** `snapshot::Snapshot`: the payload of `get_snapshot` and of the `snapshot` event. */
export interface Snapshot {
  taken_at_unix_secs: number;
  state: MonitorState;
  scan_progress: ScanProgress;
  threshold_secs: number;
  total_allocated_bytes: number;
  total_apparent_bytes: number;
  disk_full_eta_secs: number | null;
  disk_full_eta_span_secs?: number | null;
  total_growth?: ObservedGrowth | null;
  roots: RootDto[];
  producers: ProducerDto[];
  unattributed: UnattributedDto[];
  alerts: AlertDto[];
  /** Crash reports grouped by process and signature, newest report first. */
  crash_groups: CrashGroupDto[];
  errors: string[];
}

// ---- Mirrors `src/reclaim.rs` --------------------------------------------------------------

/**
 * `reclaim::KeepReason`, serde internally tagged by `reason` (kebab-case) and flattened into
 * `KeptItem`, so its fields sit beside `path` and `producer`.
 */
export type KeepReason =
  | { reason: 'too-young'; age_secs: number; needed_secs: number }
  | { reason: 'owner-alive'; pid: number }
  | { reason: 'in-use'; pid: number; open_path: string }
  | { reason: 'app-running'; name: string }
  | { reason: 'never' }
  | { reason: 'manual' }
  | { reason: 'changed'; what: string }
  | { reason: 'unknown-producer' }
  | { reason: 'holds-root'; root: string }
  | { reason: 'holds-protected'; protected_path: string }
  | { reason: 'holds-mount'; mount_point: string };

/** The reason words alone. */
export type KeepReasonKind = KeepReason['reason'];

/**
 * `reclaim::KeptItem` (`path`, `producer`, flattened reason). The in-use reason carries its own
 * `path` (the open file), which serde's flatten lays over the item's: the item path is then the
 * open file's, which is inside the item, so it still names the right item for display.
 */
export type KeptItem = { path: string; producer: string } & KeepReason;

/** `reclaim::PlannedItem`. */
export interface PlannedItem {
  path: string;
  root?: string;
  producer: string;
  allocated_bytes: number;
  apparent_bytes?: number;
  age_secs: number;
  dev?: number;
  ino?: number;
  is_symlink?: boolean;
}

/** `reclaim::ReclaimPlan`: a dry run. The UI sends back only its `id`, never paths. */
export interface ReclaimPlan {
  id: string;
  created?: unknown;
  policy?: unknown;
  items: PlannedItem[];
  kept: KeptItem[];
  planned_bytes: number;
}

/** `reclaim::DeletedItem`. */
export interface DeletedItem {
  path: string;
  producer: string;
  allocated_bytes: number;
}

/** A deletion that failed (`reclaim::ReclaimErrorEntry`). */
export interface ReclaimErrorDto {
  path: string;
  message: string;
}

/** `reclaim::ReclaimReport`. */
export interface ReclaimReport {
  deleted: DeletedItem[];
  kept: KeptItem[];
  /** Items that were gone already (not errors). */
  already_gone?: string[];
  freed_bytes: number;
  errors: ReclaimErrorDto[];
}

// ---- Shell (`src-tauri/`) shapes -----------------------------------------------------------

/** `IpcError` of the shell: every command's error. */
export interface IpcError {
  code: string;
  message: string;
}

/** A value of an alert limit in the settings form. */
export type SettingValue = number | string | boolean | null | { [key: string]: SettingValue };

/**
 * The app settings of `get_settings`/`set_settings` (the shell's DTO over `config.rs`).
 * `alerts` mirrors `alerts::AlertsConfig`, whose fields are still being written: the form
 * renders whatever fields it has (numbers, strings, booleans, nested tables).
 */
export interface Settings {
  default_threshold_secs: number;
  open_at_login: boolean;
  alerts: { [key: string]: SettingValue };
}
