// Injected before the page loads: the locale WebKitGTK gives JavaScript under `LANG=C`.
// `navigator.language` is "C", and every Intl constructor / toLocale* method given "C" or no
// locale at all (the default locale, "C") throws `RangeError: invalid language tag: C`, as the
// app's e2e run under WebKitGTK saw. `window.__badLocaleThrows` counts the throws.
(() => {
  window.__badLocaleThrows = 0;
  const isBad = (locales) =>
    locales === undefined ||
    locales === 'C' ||
    (Array.isArray(locales) && (locales.length === 0 || locales.includes('C')));
  const fail = () => {
    window.__badLocaleThrows += 1;
    return new RangeError('invalid language tag: C');
  };
  Object.defineProperty(Navigator.prototype, 'language', { configurable: true, get: () => 'C' });
  Object.defineProperty(Navigator.prototype, 'languages', { configurable: true, get: () => ['C'] });
  for (const name of ['DateTimeFormat', 'NumberFormat', 'Collator', 'PluralRules', 'RelativeTimeFormat', 'ListFormat']) {
    const Original = Intl[name];
    if (typeof Original !== 'function') continue;
    const Throwing = function (locales, options) {
      if (isBad(locales)) throw fail();
      return new Original(locales, options);
    };
    Throwing.prototype = Original.prototype;
    Throwing.supportedLocalesOf = Original.supportedLocalesOf.bind(Original);
    Intl[name] = Throwing;
  }
  const methods = [
    [Number.prototype, 'toLocaleString'],
    [BigInt.prototype, 'toLocaleString'],
    [Date.prototype, 'toLocaleString'],
    [Date.prototype, 'toLocaleDateString'],
    [Date.prototype, 'toLocaleTimeString'],
    [Array.prototype, 'toLocaleString'],
    [String.prototype, 'localeCompare'],
  ];
  for (const [proto, method] of methods) {
    const original = proto[method];
    const localesArg = method === 'localeCompare' ? 1 : 0;
    Object.defineProperty(proto, method, {
      configurable: true,
      writable: true,
      value: function (...args) {
        if (isBad(args[localesArg])) throw fail();
        return original.apply(this, args);
      },
    });
  }
})();
