// A tiny element builder: text goes in as text nodes (never as HTML), handlers as listeners.

type Child = Node | string | null | undefined | false;

/** Attributes (`class`, `aria-*`, `data-*`, ...) and `on*` listeners of `h`. */
export type Props = Record<string, string | number | boolean | null | undefined | EventListener>;

/**
 * Creates `<tag>` with `props` and `children`. A `string`/`number` prop becomes an attribute,
 * `true` an empty attribute, `false`/`null`/`undefined` none; a function prop named `onclick`
 * becomes a `click` listener.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === 'function') {
      el.addEventListener(name.replace(/^on/, ''), value);
    } else if (value === true) {
      el.setAttribute(name, '');
    } else if (value !== false && value !== null && value !== undefined) {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Appends children, skipping empty ones. */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** Replaces all children of `parent`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * Runs `render`, keeping the focus on the element with the same `data-key` as the focused one
 * before (re-rendering a list must not throw the keyboard user back to the top).
 */
export function keepFocus(render: () => void): void {
  const active = document.activeElement as HTMLElement | null;
  const key = active?.dataset?.key;
  render();
  if (!key) return;
  if (document.activeElement === active && active?.isConnected) return;
  const again = document.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`);
  again?.focus({ preventScroll: true });
}
