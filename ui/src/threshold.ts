// The reclaim age threshold's presets (a custom value is read by the engine: `read_threshold`).

/** A preset of the threshold control. */
export interface ThresholdPreset {
  label: string;
  secs: number;
}

/** The presets: 5 min, 1 h, 1 d, 3 d, 7 d (a custom value is typed). */
export const THRESHOLD_PRESETS: readonly ThresholdPreset[] = [
  { label: '5 min', secs: 300 },
  { label: '1 h', secs: 3600 },
  { label: '1 d', secs: 86400 },
  { label: '3 d', secs: 3 * 86400 },
  { label: '7 d', secs: 7 * 86400 },
];

/** The preset whose seconds equal `secs`, if any. */
export function presetFor(secs: number): ThresholdPreset | undefined {
  return THRESHOLD_PRESETS.find((preset) => preset.secs === secs);
}
