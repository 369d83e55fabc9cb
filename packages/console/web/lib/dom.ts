/**
 * Building blocks of the console's pages: elements, buttons, record cards, tables and the status
 * line. Text from the server is always set as text (`textContent`), never as HTML.
 */

/** A JSON object as the admin API answers it. */
export type Json = Record<string, unknown>;

/** The page's `<main>`, where each page renders. */
export const main = document.getElementById('main') as HTMLElement;
const status = document.getElementById('status') as HTMLElement;

/**
 * An element with attributes and children. The attribute `text` sets the text content; `false`
 * leaves an attribute out, `true` sets it empty.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean> = {},
  ...children: (Node | string | undefined)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false) continue;
    if (name === 'text') node.textContent = String(value);
    else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child !== undefined) node.append(child);
  return node;
}

/** Says `message` in the status line (a polite live region) for six seconds. */
export function say(message: string): void {
  status.textContent = message;
  window.setTimeout(() => {
    if (status.textContent === message) status.textContent = '';
  }, 6000);
}

/** The page's `<h1>`. */
export function heading(text: string): HTMLElement {
  return el('h1', { text });
}

/** A button; `label` is its accessible name when the visible text is not enough ("Edit" of which record). */
export function button(text: string, onClick: () => void, kind = 'secondary', label?: string): HTMLButtonElement {
  const b = el('button', { type: 'button', class: kind, text });
  if (label) b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  return b;
}

/** A record's card: its title, one paragraph a line, then its actions. */
export function recordItem(title: string, lines: (string | HTMLElement)[], ...actions: HTMLElement[]): HTMLElement {
  return el(
    'li',
    { class: 'record' },
    el('h2', { text: title }),
    ...lines.map((line) => (typeof line === 'string' ? el('p', { text: line }) : line)),
    el('div', { class: 'actions' }, ...actions),
  );
}

/**
 * A table with a caption and column headings. On a narrow screen its rows stack as cards, each
 * cell labelled with its column's heading (`data-label`).
 */
export function table(caption: string, headings: string[], rows: HTMLElement[], numeric: string[] = []): HTMLElement {
  for (const row of rows) {
    [...row.children].forEach((cell, i) => {
      if (headings[i] !== undefined) cell.setAttribute('data-label', headings[i]);
    });
  }
  return el(
    'table',
    { class: 'stack' },
    el('caption', { text: caption }),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...headings.map((h) => el('th', { scope: 'col', class: numeric.includes(h) ? 'number' : '', text: h })),
      ),
    ),
    el('tbody', {}, ...rows),
  );
}

/** A description list of term and text pairs. */
export function facts(pairs: [string, string | HTMLElement][]): HTMLElement {
  const list = el('dl', { class: 'facts' });
  for (const [term, text] of pairs) {
    list.append(el('dt', { text: term }), typeof text === 'string' ? el('dd', { text }) : el('dd', {}, text));
  }
  return list;
}

/**
 * A time in the operator's locale and time zone (the browser's), such as "27 Nov 2026, 09:14";
 * `fallback` when there is none.
 */
export function when(iso: unknown, fallback = 'never'): string {
  if (typeof iso !== 'string' && typeof iso !== 'number') return fallback;
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return fallback;
  return time.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** A value with a "Copy" button beside it (the value is shown as code). */
export function copyable(value: string, what: string): HTMLElement {
  return el(
    'span',
    { class: 'copyable' },
    el('code', { text: value }),
    button(
      'Copy',
      () =>
        void navigator.clipboard.writeText(value).then(
          () => say(`${what} copied.`),
          () => say(`Select the ${what.toLowerCase()} and copy it.`),
        ),
      'secondary small',
      `Copy ${what.toLowerCase()} ${value}`,
    ),
  );
}
