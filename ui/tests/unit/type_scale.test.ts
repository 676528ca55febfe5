// The window's type scale: every font size, weight and numeric variant is one more font face the
// web engine looks up when a fresh window lays out its first page (WebKitGTK: about 25 ms each), and
// the window is built anew on every open. Ten faces made the first paint wait ~290 ms after the
// page's navigation started; five, ~185 ms. This keeps a new rule from adding a sixth unnoticed.
// The family is named, not `system-ui`: WebKitGTK 2.50 spent ~100 ms more on the first layout with
// `system-ui` (style.css says what was measured); WKWebView takes `-apple-system` as the system font.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const css = readFileSync(fileURLToPath(new URL('../../src/style.css', import.meta.url)), 'utf8')
  .replace(/\/\*[\s\S]*?\*\//g, '');

function values(property: string): Set<string> {
  const found = new Set<string>();
  for (const m of css.matchAll(new RegExp(`(?:^|[;{\\s])${property}\\s*:\\s*([^;}]+)`, 'g'))) {
    found.add(m[1].trim());
  }
  return found;
}

describe('the style sheet', () => {
  it('sizes text at 11, 13 or 15 px only', () => {
    const sizes = values('font-size');
    expect(sizes.size).toBeGreaterThan(0);
    expect([...sizes].sort()).toEqual(['11px', '13px', '15px']);
  });

  it('weighs text 400 or 600 only (600 is the only weight set; 400 is the default)', () => {
    expect([...values('font-weight')]).toEqual(['600']);
  });

  it('sets one numeric variant, on the root, and one family', () => {
    expect([...values('font-variant-numeric')]).toEqual(['tabular-nums']);
    expect(css.match(/font-variant-numeric/g)).toHaveLength(1);
    expect([...values('font-family')]).toEqual(['-apple-system, sans-serif']);
    expect([...values('font')]).toEqual(['inherit']);
  });
});
