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

/**
 * The units humantime reads (case-sensitive, as the engine's `units::parse_threshold`): their
 * length in seconds, or for units below a minute their length in nanoseconds.
 */
const UNITS: Record<string, { secs?: bigint; nanos?: bigint }> = {
  nanos: { nanos: 1n }, nsec: { nanos: 1n }, ns: { nanos: 1n },
  usec: { nanos: 1_000n }, us: { nanos: 1_000n }, 'µs': { nanos: 1_000n },
  millis: { nanos: 1_000_000n }, msec: { nanos: 1_000_000n }, ms: { nanos: 1_000_000n },
  seconds: { nanos: 1_000_000_000n }, second: { nanos: 1_000_000_000n }, secs: { nanos: 1_000_000_000n },
  sec: { nanos: 1_000_000_000n }, s: { nanos: 1_000_000_000n },
  minutes: { nanos: 60_000_000_000n }, minute: { nanos: 60_000_000_000n }, min: { nanos: 60_000_000_000n },
  mins: { nanos: 60_000_000_000n }, m: { nanos: 60_000_000_000n },
  hours: { secs: 3600n }, hour: { secs: 3600n }, hr: { secs: 3600n }, hrs: { secs: 3600n }, h: { secs: 3600n },
  days: { secs: 86_400n }, day: { secs: 86_400n }, d: { secs: 86_400n },
  weeks: { secs: 604_800n }, week: { secs: 604_800n }, wk: { secs: 604_800n }, wks: { secs: 604_800n },
  w: { secs: 604_800n },
  months: { secs: 2_630_016n }, month: { secs: 2_630_016n }, M: { secs: 2_630_016n },
  years: { secs: 31_557_600n }, year: { secs: 31_557_600n }, yr: { secs: 31_557_600n }, yrs: { secs: 31_557_600n },
  y: { secs: 31_557_600n },
};

/**
 * Parses a custom threshold as the engine reads a duration (humantime: `units::parse_threshold`,
 * tested against its vectors in `ui/tests/generated/human.ts`): one or more `<number><unit>`
 * parts, spaces allowed between them and before a unit (`90m`, `1h30m`, `2 d`, `1.5h`, `1h 30min`),
 * units case-sensitive (`m` minutes, `M` months). Returns whole seconds (rounded down), or `null`
 * when the text is not a duration or is under a second (a zero threshold would reclaim items still
 * being written).
 */
export function parseThreshold(text: string): number | null {
  const part = /\s*(\d+)(?:\.(\d*))?\s*([a-zA-Zµ]+)\s*/y;
  if (text.trim() === '') return null;
  let secs = 0n;
  let nanos = 0n;
  let index = 0;
  while (index < text.length) {
    part.lastIndex = index;
    const match = part.exec(text);
    if (!match) return null;
    const unit = UNITS[match[3]];
    if (unit === undefined) return null;
    const whole = BigInt(match[1]);
    const digits = match[2] ?? '';
    const num = digits === '' ? 0n : BigInt(digits);
    const den = 10n ** BigInt(digits.length);
    if (unit.secs !== undefined) {
      secs += whole * unit.secs + (num * unit.secs) / den;
    } else if (unit.nanos !== undefined) {
      if (unit.nanos === 1n && digits !== '') return null;
      nanos += whole * unit.nanos + (num * unit.nanos) / den;
    }
    index = part.lastIndex;
  }
  const total = secs + nanos / 1_000_000_000n;
  if (total <= 0n || total > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return Number(total);
}

/** The preset whose seconds equal `secs`, if any. */
export function presetFor(secs: number): ThresholdPreset | undefined {
  return THRESHOLD_PRESETS.find((preset) => preset.secs === secs);
}
