// The reclaim age threshold: presets and parsing of a custom value.

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

const UNIT_SECS: Record<string, number> = {
  s: 1,
  sec: 1,
  secs: 1,
  m: 60,
  min: 60,
  mins: 60,
  h: 3600,
  hr: 3600,
  hrs: 3600,
  d: 86400,
  day: 86400,
  days: 86400,
  w: 7 * 86400,
  wk: 7 * 86400,
  weeks: 7 * 86400,
};

/**
 * Parses a custom threshold: one or more `<number><unit>` parts (`90m`, `1h30m`, `2 d`, `1.5h`),
 * units s, m/min, h, d, w. Returns whole seconds, or `null` when the text is not a duration or is
 * zero (a zero threshold would reclaim items still being written).
 */
export function parseThreshold(text: string): number | null {
  const compact = text.trim().toLowerCase();
  if (compact === '') return null;
  const part = /(\d+(?:\.\d+)?)\s*([a-z]+)\s*/y;
  let total = 0;
  let index = 0;
  while (index < compact.length) {
    part.lastIndex = index;
    const match = part.exec(compact);
    if (!match) return null;
    const unit = UNIT_SECS[match[2]];
    if (unit === undefined) return null;
    total += Number(match[1]) * unit;
    index = part.lastIndex;
  }
  const secs = Math.round(total);
  return secs > 0 ? secs : null;
}

/** The preset whose seconds equal `secs`, if any. */
export function presetFor(secs: number): ThresholdPreset | undefined {
  return THRESHOLD_PRESETS.find((preset) => preset.secs === secs);
}
