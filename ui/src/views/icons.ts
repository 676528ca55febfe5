// Small line icons as SVG built in the DOM (no font glyphs that may be missing, no inline HTML).
const SVG_NS = 'http://www.w3.org/2000/svg';

const PATHS: Record<'pause' | 'play' | 'rescan' | 'settings', string[]> = {
  pause: ['M5 3v10', 'M11 3v10'],
  play: ['M5 3l8 5-8 5z'],
  rescan: ['M13 8a5 5 0 1 1-1.5-3.6', 'M13 2.5v3h-3'],
  settings: [
    'M8 5.5a2.5 2.5 0 1 0 0 5 2.5 2.5 0 1 0 0-5z',
    'M8 1v2M8 13v2M1 8h2M13 8h2M3 3l1.5 1.5M11.5 11.5L13 13M3 13l1.5-1.5M11.5 4.5L13 3',
  ],
};

/** A 16×16 icon drawn with the current text colour. */
export function icon(name: keyof typeof PATHS): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '15');
  svg.setAttribute('height', '15');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon');
  for (const d of PATHS[name]) {
    const path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    svg.appendChild(path);
  }
  return svg;
}
