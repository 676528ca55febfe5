import { afterEach, describe, expect, it } from 'vitest';
import {
  FALLBACK_LOCALE,
  defaultLocaleWorks,
  installLocaleGuard,
  pickLocale,
  validLocale,
  type NavigatorLike,
} from '../../src/locale';
import { formatSampleBytes, formatSecs } from '../../src/views/chart';

describe('validLocale', () => {
  it('rejects the POSIX locale names and non-tags', () => {
    for (const bad of ['C', 'POSIX', 'C.UTF-8', 'en_US.UTF-8', '', '  ', 'x', undefined, null, 42]) {
      expect(validLocale(bad)).toBeNull();
    }
  });
  it('canonicalizes valid tags', () => {
    expect(validLocale('en-us')).toBe('en-US');
    expect(validLocale('de-DE')).toBe('de-DE');
    expect(validLocale('fr')).toBe('fr');
  });
});

describe('pickLocale', () => {
  it('takes the first valid of navigator.language and navigator.languages', () => {
    expect(pickLocale({ language: 'C', languages: ['C', 'de-de', 'fr'] })).toBe('de-DE');
    expect(pickLocale({ language: 'en-GB', languages: ['de-DE'] })).toBe('en-GB');
  });
  it('falls back to en-US', () => {
    expect(FALLBACK_LOCALE).toBe('en-US');
    expect(pickLocale({ language: 'C', languages: ['C'] })).toBe('en-US');
    expect(pickLocale({})).toBe('en-US');
    expect(pickLocale(undefined)).toBe('en-US');
    const throwing = Object.defineProperty({}, 'language', { get: () => { throw new Error('no'); } });
    expect(pickLocale(throwing as NavigatorLike)).toBe('en-US');
  });
});

describe('installLocaleGuard', () => {
  it('leaves a valid navigator and a working default locale alone', () => {
    const nav: NavigatorLike = { language: 'en-GB', languages: ['en-GB'] };
    expect(defaultLocaleWorks()).toBe(true);
    expect(installLocaleGuard(nav)).toEqual({ locale: 'en-GB', patchedNavigator: false, patchedIntl: false });
    expect(nav.language).toBe('en-GB');
    expect(Object.getOwnPropertyDescriptor(nav, 'language')?.get).toBeUndefined();
  });

  it('shadows navigator.language "C" with the picked locale', () => {
    const nav: NavigatorLike = { language: 'C', languages: ['C'] };
    expect(installLocaleGuard(nav)).toEqual({ locale: 'en-US', patchedNavigator: true, patchedIntl: false });
    expect(nav.language).toBe('en-US');
    expect(nav.languages).toEqual(['en-US']);
    // What uPlot does at load: it must not throw now.
    expect(new Intl.NumberFormat(nav.language).format(12345)).toBe('12,345');
  });

  describe('when the default locale throws', () => {
    const intl = Intl as unknown as Record<string, unknown>;
    const saved = {
      NumberFormat: Intl.NumberFormat,
      DateTimeFormat: Intl.DateTimeFormat,
      numberToLocale: Object.getOwnPropertyDescriptor(Number.prototype, 'toLocaleString'),
      dateToLocale: Object.getOwnPropertyDescriptor(Date.prototype, 'toLocaleString'),
    };
    afterEach(() => {
      intl.NumberFormat = saved.NumberFormat;
      intl.DateTimeFormat = saved.DateTimeFormat;
      if (saved.numberToLocale) Object.defineProperty(Number.prototype, 'toLocaleString', saved.numberToLocale);
      if (saved.dateToLocale) Object.defineProperty(Date.prototype, 'toLocaleString', saved.dateToLocale);
    });

    it('retries Intl and toLocale* with the picked locale, and only a locale RangeError', () => {
      // The WebKitGTK-under-LANG=C behaviour: no locale or "C" → RangeError.
      const bad = (l: unknown) => l === undefined || l === 'C';
      for (const name of ['NumberFormat', 'DateTimeFormat'] as const) {
        const Original = saved[name] as unknown as new (l?: unknown, o?: unknown) => object;
        const Throwing = function (l?: unknown, o?: unknown) {
          if (bad(l)) throw new RangeError('invalid language tag: C');
          return new Original(l, o);
        };
        Throwing.prototype = Original.prototype;
        intl[name] = Throwing;
      }
      const numberToLocale = Number.prototype.toLocaleString;
      Object.defineProperty(Number.prototype, 'toLocaleString', {
        configurable: true,
        writable: true,
        value: function (this: number, l?: string, o?: Intl.NumberFormatOptions) {
          if (bad(l)) throw new RangeError('invalid language tag: C');
          return numberToLocale.call(this, l, o);
        },
      });
      expect(defaultLocaleWorks()).toBe(false);
      expect(() => new Intl.NumberFormat()).toThrow(RangeError);

      const nav: NavigatorLike = { language: 'C', languages: ['C', 'de-DE'] };
      expect(installLocaleGuard(nav)).toEqual({ locale: 'de-DE', patchedNavigator: true, patchedIntl: true });
      expect(defaultLocaleWorks()).toBe(true);
      expect(new Intl.NumberFormat().format(1234.5)).toBe('1.234,5'); // de-DE grouping
      expect(new Intl.NumberFormat('C').resolvedOptions().locale).toBe('de-DE');
      expect(new Intl.NumberFormat() instanceof Intl.NumberFormat).toBe(true);
      expect((1234).toLocaleString()).toBe('1.234');
      expect((1234).toLocaleString('en-US')).toBe('1,234'); // an explicit valid locale is kept
      const utc = new Intl.DateTimeFormat(undefined, { timeZone: 'UTC', year: 'numeric' });
      expect(utc.format(0)).toBe('1970');
      // A RangeError of the options is not a locale problem: it still throws.
      expect(() => new Intl.DateTimeFormat(undefined, { timeZone: 'Not/AZone' })).toThrow(RangeError);
    });
  });
});

describe('sparkline formatters (no locale involved)', () => {
  it('prints seconds as digits and samples in binary units', () => {
    expect(formatSecs(1760000000)).toBe('1760000000');
    expect(formatSecs(null)).toBe('');
    expect(formatSampleBytes(150 * 1024 * 1024)).toBe('150 MiB');
    expect(formatSampleBytes(undefined)).toBe('');
  });
});
