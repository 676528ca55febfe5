// Imported first by main.ts, for its side effect: makes the locale safe before any other module
// (or uPlot, loaded later) formats a number or a date. See `locale.ts`.
import { installLocaleGuard } from './locale';

/** What the guard did at start-up (`{ locale, patchedNavigator, patchedIntl }`). */
export const localeGuard = installLocaleGuard(typeof navigator === 'undefined' ? undefined : navigator);
