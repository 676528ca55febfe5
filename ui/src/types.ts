// The shapes the engine sends over IPC are generated from the Rust DTOs into `./bindings`
// (`cargo test -p cachewatch-app --lib bindings`; CI fails when they are out of date). Sizes are
// bytes, times Unix seconds, durations seconds: the unit is in every name, as in the Rust structs.
// Rust `u64`/`i64` arrive as JS numbers. Only the window's own types are written here.
import type { ErrorCode, KeepReason } from './bindings';

export type {
  AlertDto,
  AlertRule,
  AlertsConfig,
  ChartReclaim,
  EvidenceDto,
  EvidenceKindDto,
  ChartSample,
  Command,
  CommandArgs,
  CommandResult,
  CrashGroupDto,
  CrashLoopConfig,
  DeletedItem,
  ErrorCode,
  GroupRuleAdded,
  GroupRuleDto,
  GroupRulePreview,
  IpcError,
  ItemDto,
  KeepCode,
  KeepReason,
  KeptGroupDto,
  KeptItem,
  MonitorState,
  ObservedGrowth,
  PlannedItem,
  PreviewProducer,
  ProducerDto,
  GroupHistory,
  ProducerHistory,
  ProducerKind,
  ReclaimErrorEntry,
  ReclaimEstimate,
  ReclaimHistory,
  ReclaimMode,
  ReclaimPreview,
  ReclaimResult,
  ReclaimRun,
  ReportDraft,
  RootDto,
  RootKind,
  RootStatus,
  ScanProgress,
  Settings,
  ReclaimJob,
  Snapshot,
  UiState,
  UiView,
  UnattributedDto,
  UnattributedGroupDto,
  WriterDto,
  WatchMode,
} from './bindings';

/** The reason words alone (`too-young`, `holds-mount`, ...). */
export type KeepReasonKind = KeepReason['reason'];

/**
 * An error as the window shows it: the shell's `IpcError` (`code` an `ErrorCode`), or one of the
 * window's own, code `ui` (a rejection that was not an `IpcError`, a form that does not parse).
 */
export interface UiError {
  code: ErrorCode | 'ui';
  message: string;
  /** The settings field the error is about (`alerts.total_limit_bytes`), when it is about one. */
  field?: string;
}

/** A value of an alert limit in the settings form. */
export type SettingValue = number | string | boolean | null | { [key: string]: SettingValue };
