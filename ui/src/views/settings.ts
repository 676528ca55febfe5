// The settings dialog: default threshold, alert limits (whatever fields `AlertsConfig` has),
// open at login.
import { h, replaceChildren } from '../dom';
import { formatDuration } from '../format';
import type { SettingValue, Settings, UiError } from '../types';

/** `producer_growth_bytes_per_hour` → `Producer growth bytes per hour`. */
export function humanizeKey(key: string): string {
  const words = key.replace(/[._-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Whether the field at `path` (`alerts.total_limit_bytes`) is a size, shown and typed in units. */
export function isSizeField(path: string): boolean {
  return path.endsWith('_bytes');
}

/** A size field's label: the unit is in the value (`total_limit_bytes` → `Total limit`). */
function sizeLabel(key: string): string {
  return humanizeKey(key.replace(/_bytes$/, ''));
}

/** The alert limits as the form sees them: fields of numbers, strings, booleans, nested tables. */
type Fields = { [key: string]: SettingValue };

/**
 * Reads the form back into a copy of `base` (the generated `AlertsConfig`, or any table of
 * fields): each field keeps its type (a number field left empty becomes `null`; a text that is not
 * a number in a number field is an error naming the field). A field `read` gives `undefined` for
 * keeps its value (a size: the engine reads its text, sent beside the settings).
 */
export function readAlerts<T extends Fields>(
  base: T,
  read: (path: string) => string | boolean | undefined,
  prefix = 'alerts',
): T {
  const out: { [key: string]: SettingValue } = {};
  for (const [key, value] of Object.entries(base)) {
    const path = `${prefix}.${key}`;
    if (value !== null && typeof value === 'object') {
      out[key] = readAlerts(value, read, path);
    } else if (read(path) === undefined) {
      out[key] = value;
    } else if (typeof value === 'boolean') {
      out[key] = read(path) === true;
    } else if (typeof value === 'number' || value === null) {
      const text = String(read(path)).trim();
      if (text === '') {
        out[key] = null;
        continue;
      }
      const number = Number(text);
      if (!Number.isFinite(number)) throw new Error(`"${text}" is not a number (${humanizeKey(key)})`);
      out[key] = number;
    } else {
      out[key] = String(read(path));
    }
  }
  // every key of `base` is set above, with the type its value had
  return out as T;
}

/** The dialog; `open()` loads the settings, Save sends them. */
export class SettingsDialog {
  private settings: Settings | null = null;

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly load: () => Promise<Settings>,
    /** Saves; the engine reads the sizes as typed and rejects a bad one naming its `field`. */
    private readonly save: (settings: Settings) => Promise<void>,
    /** Reads a threshold as typed (the engine's reader); rejects with the engine's reason. */
    private readonly readThreshold: (text: string) => Promise<number>,
  ) {
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      this.close();
    });
  }

  /** Loads the settings and shows the form (or the error). */
  async open(): Promise<void> {
    replaceChildren(this.dialog, h('h2', { id: 'settings-title' }, 'Settings'), h('p', { class: 'muted' }, 'Loading…'));
    this.dialog.setAttribute('aria-labelledby', 'settings-title');
    if (!this.dialog.open) this.dialog.showModal();
    try {
      this.settings = await this.load();
      this.renderForm(this.settings, null);
    } catch (error) {
      this.renderError(error as UiError);
    }
  }

  /** Closes without saving. */
  close(): void {
    if (this.dialog.open) this.dialog.close();
    document.querySelector<HTMLElement>('[data-key="settings"]')?.focus();
  }

  private renderError(error: UiError): void {
    replaceChildren(
      this.dialog,
      h('h2', { id: 'settings-title' }, 'Settings'),
      h('p', { class: 'error-text', role: 'alert' }, error.message),
      h('div', { class: 'dialog-buttons' }, h('button', { type: 'button', onclick: () => this.close() }, 'Close')),
    );
  }

  private renderForm(settings: Settings, message: string | null): void {
    const form = h('form', { class: 'settings', method: 'dialog' });
    const threshold = h('input', {
      type: 'text',
      name: 'default_threshold',
      id: 'set-threshold',
      value: formatDuration(settings.default_threshold_secs).replace(/ /g, ''),
      autocomplete: 'off',
      spellcheck: 'false',
    });
    const login = h('input', { type: 'checkbox', id: 'set-login', name: 'open_at_login' });
    login.checked = settings.open_at_login;
    form.append(
      h('label', { class: 'field', for: 'set-threshold' }, h('span', {}, 'Default threshold'), threshold),
      h('label', { class: 'check' }, login, h('span', {}, 'Open at login')),
      h('h3', {}, 'Alert limits'),
    );
    if (Object.keys(settings.alerts).length === 0) {
      form.append(h('p', { class: 'muted' }, 'This version has no alert limits to set.'));
    }
    appendFields(form, settings.alerts, 'alerts', settings.sizes);
    const error = h('p', { class: 'error-text', role: 'alert' }, message ?? '');
    form.append(
      error,
      h(
        'div',
        { class: 'dialog-buttons' },
        h('button', { type: 'button', onclick: () => this.close() }, 'Cancel'),
        h('button', { type: 'submit', class: 'primary' }, 'Save'),
      ),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.submit(form, settings, error);
    });
    replaceChildren(this.dialog, h('h2', { id: 'settings-title' }, 'Settings'), form);
    threshold.focus();
  }

  private async submit(form: HTMLFormElement, base: Settings, error: HTMLElement): Promise<void> {
    const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement | null;
    let secs: number;
    try {
      secs = await this.readThreshold(field('default_threshold')?.value ?? '');
    } catch (e) {
      error.textContent = `Default threshold: ${(e as UiError).message}`;
      field('default_threshold')?.focus();
      return;
    }
    // Sizes as typed ("50 MiB") go to the engine with the settings, which reads them.
    const sizes: { [path: string]: string } = {};
    for (const input of Array.from(form.querySelectorAll<HTMLInputElement>('input[data-size]'))) {
      sizes[input.name] = input.value.trim();
    }
    let next: Settings;
    try {
      next = {
        default_threshold_secs: secs,
        open_at_login: field('open_at_login')?.checked ?? false,
        sizes,
        alerts: readAlerts(base.alerts, (path) => {
          if (path in sizes) return undefined;
          const input = field(path);
          if (!input) return '';
          if (input.type === 'checkbox') return input.checked;
          return input.value;
        }),
      };
    } catch (e) {
      error.textContent = (e as Error).message;
      return;
    }
    try {
      await this.save(next);
      this.settings = next;
      this.close();
    } catch (e) {
      const failed = e as UiError;
      const input = failed.field === undefined ? null : field(failed.field);
      if (input && failed.field !== undefined) {
        error.textContent = `${sizeLabel(failed.field.split('.').pop() ?? '')}: ${failed.message}`;
        input.focus();
      } else {
        error.textContent = failed.message;
      }
    }
  }
}

function appendFields(
  form: HTMLElement,
  values: { [key: string]: SettingValue },
  prefix: string,
  sizes: { [path: string]: string | undefined },
): void {
  for (const [key, value] of Object.entries(values)) {
    const path = `${prefix}.${key}`;
    const id = `set-${path.replace(/\./g, '-')}`;
    if (value !== null && typeof value === 'object') {
      form.appendChild(h('h4', {}, humanizeKey(key)));
      appendFields(form, value, path, sizes);
    } else if (typeof value === 'boolean') {
      const input = h('input', { type: 'checkbox', id, name: path });
      input.checked = value;
      form.appendChild(h('label', { class: 'check' }, input, h('span', {}, humanizeKey(key))));
    } else {
      const numeric = typeof value === 'number' || value === null;
      const size = numeric && isSizeField(path);
      // A size as the engine writes it exactly (`50 MiB`), so it reads back as the same number.
      const shown = size ? (sizes[path] ?? '') : value === null ? '' : String(value);
      form.appendChild(
        h(
          'label',
          { class: 'field', for: id },
          h('span', {}, size ? sizeLabel(key) : humanizeKey(key)),
          h('input', {
            type: 'text',
            inputmode: numeric && !size ? 'numeric' : null,
            id,
            name: path,
            value: shown,
            placeholder: size ? 'e.g. 20 GiB' : null,
            'data-size': size ? 'true' : null,
            autocomplete: 'off',
          }),
        ),
      );
    }
  }
}
