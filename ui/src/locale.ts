// A locale JavaScript can use, and a guard for engines whose default locale is not one.
//
// WebKitGTK under `LANG=C` (CI, a bare launchd environment) gives JavaScript the language "C":
// `navigator.language === 'C'`, and `Intl`/`toLocale*` given "C" (or, in the worst case, no
// locale at all) throw `RangeError: invalid language tag: C`. uPlot formats with
// `new Intl.NumberFormat(navigator.language)` when its module loads, so one bad tag blanked the
// window. The window's own code always names its locale; `installLocaleGuard` covers library code.

/** The locale used when the platform offers no valid one. */
export const FALLBACK_LOCALE = 'en-US';

/** The minimal slice of `navigator` the guard reads and patches. */
export interface NavigatorLike {
  language?: string;
  languages?: readonly string[];
}

/**
 * `tag` canonicalized (`en-us` → `en-US`) when `Intl` accepts it for number and date formats;
 * `null` for anything else (`C`, `POSIX`, `C.UTF-8`, `''`, non-strings, a tag the engine rejects).
 */
export function validLocale(tag: unknown): string | null {
  if (typeof tag !== 'string' || tag.trim() === '') return null;
  // The POSIX names: "POSIX" is a well-formed tag to Intl, but no language.
  if (/^(c|posix)([._@-].*)?$/i.test(tag.trim())) return null;
  try {
    const [canonical] = Intl.getCanonicalLocales(tag);
    if (!canonical) return null;
    new Intl.NumberFormat(canonical).format(1);
    new Intl.DateTimeFormat(canonical).format(0);
    return canonical;
  } catch {
    return null;
  }
}

/** The first valid locale among `navigator.language` and `navigator.languages`, else `en-US`. */
export function pickLocale(nav: NavigatorLike | undefined): string {
  const candidates: unknown[] = [];
  try {
    candidates.push(nav?.language, ...(nav?.languages ?? []));
  } catch {
    // A getter that throws offers no locale.
  }
  for (const candidate of candidates) {
    const locale = validLocale(candidate);
    if (locale !== null) return locale;
  }
  return FALLBACK_LOCALE;
}

/** Whether `Intl` and `toLocale*` work with the default locale (no locale argument). */
export function defaultLocaleWorks(): boolean {
  try {
    new Intl.NumberFormat().format(1);
    new Intl.DateTimeFormat().resolvedOptions();
    (1).toLocaleString();
    new Date(0).toLocaleString();
    return true;
  } catch {
    return false;
  }
}

/** What `installLocaleGuard` changed, for tests and a diagnostic line. */
export interface GuardReport {
  locale: string;
  /** `navigator.language(s)` was invalid and now reads `locale`. */
  patchedNavigator: boolean;
  /** The default locale threw: `Intl` constructors and `toLocale*` now fall back to `locale`. */
  patchedIntl: boolean;
}

const INTL_CONSTRUCTORS = [
  'DateTimeFormat',
  'NumberFormat',
  'Collator',
  'PluralRules',
  'RelativeTimeFormat',
  'ListFormat',
] as const;

/** Prototype methods taking `locales` (at the index given). */
const LOCALE_METHODS: [object, string, number][] = [
  [Number.prototype, 'toLocaleString', 0],
  [Date.prototype, 'toLocaleString', 0],
  [Date.prototype, 'toLocaleDateString', 0],
  [Date.prototype, 'toLocaleTimeString', 0],
  [Array.prototype, 'toLocaleString', 0],
  [String.prototype, 'localeCompare', 1],
];

/**
 * Makes library code safe where the platform's locale is not a valid tag. Does nothing where
 * `navigator.language` is valid and the default locale works (every normal system).
 *
 * Otherwise: an invalid `navigator.language`/`languages` is shadowed on `nav` by the picked
 * locale, and when the default locale throws, the `Intl` constructors and `toLocale*` methods
 * retry a call that threw `RangeError` with the picked locale (a `RangeError` of the options
 * still throws, from the retry). Run it before any library formats (main.ts imports it first;
 * uPlot is loaded after it).
 */
export function installLocaleGuard(nav: NavigatorLike | undefined): GuardReport {
  const locale = pickLocale(nav);
  const report: GuardReport = { locale, patchedNavigator: false, patchedIntl: false };
  let navLanguage: unknown;
  try {
    navLanguage = nav?.language;
  } catch {
    navLanguage = undefined;
  }
  if (nav && validLocale(navLanguage) === null) {
    try {
      Object.defineProperty(nav, 'language', { configurable: true, get: () => locale });
      Object.defineProperty(nav, 'languages', { configurable: true, get: () => [locale] });
      report.patchedNavigator = true;
    } catch {
      // A frozen navigator: the Intl fallback below still applies.
    }
  }
  if (!defaultLocaleWorks()) {
    patchIntl(locale);
    report.patchedIntl = true;
  }
  return report;
}

function patchIntl(locale: string): void {
  const intl = Intl as unknown as Record<string, unknown>;
  for (const name of INTL_CONSTRUCTORS) {
    const Original = intl[name] as (new (locales?: unknown, options?: unknown) => object) | undefined;
    if (typeof Original !== 'function') continue;
    const Guarded = function (locales?: unknown, options?: unknown): object {
      try {
        return new Original(locales, options);
      } catch (error) {
        if (!(error instanceof RangeError)) throw error;
        return new Original(locale, options);
      }
    };
    Guarded.prototype = Original.prototype;
    Object.defineProperty(Guarded, 'name', { value: name });
    const statics = Original as unknown as { supportedLocalesOf?: (...args: unknown[]) => unknown };
    if (typeof statics.supportedLocalesOf === 'function') {
      (Guarded as unknown as Record<string, unknown>).supportedLocalesOf = statics.supportedLocalesOf.bind(Original);
    }
    intl[name] = Guarded;
  }
  for (const [proto, method, localesIndex] of LOCALE_METHODS) {
    const target = proto as Record<string, unknown>;
    const original = target[method] as ((...args: unknown[]) => unknown) | undefined;
    if (typeof original !== 'function') continue;
    Object.defineProperty(proto, method, {
      configurable: true,
      writable: true,
      value: function (this: unknown, ...args: unknown[]): unknown {
        try {
          return original.apply(this, args);
        } catch (error) {
          if (!(error instanceof RangeError)) throw error;
          const retry = [...args];
          while (retry.length < localesIndex) retry.push(undefined);
          retry[localesIndex] = locale;
          return original.apply(this, retry);
        }
      },
    });
  }
}
