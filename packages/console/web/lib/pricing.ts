/**
 * The price editor of a provider's form: one row per model id with its input, output, cache-write
 * and cache-read prices in USD per million tokens, checked on the page (every wrong cell reported
 * beside it) and sent as the provider's `pricing`.
 */
import { button, el, type Json } from './dom.js';
import { field, showErrors, type FieldError } from './forms.js';

/** One model's prices, USD per million tokens, as the admin API takes them. */
export interface ModelPrice {
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
}

/** The price columns: the record's field, the cell's label, and whether a price is required. */
const PRICE_COLUMNS: { name: keyof ModelPrice; label: string; required: boolean }[] = [
  { name: 'input', label: 'Input', required: true },
  { name: 'output', label: 'Output', required: true },
  { name: 'cacheWrite', label: 'Cache write', required: false },
  { name: 'cacheRead', label: 'Cache read', required: false },
];

/** The highest price the gateway takes, USD per million tokens. */
const MAX_PRICE = 100_000;
/** The most models a provider's price table holds. */
const MAX_ROWS = 1000;

/**
 * The editor, filled with `pricing` (a provider's stored table): a fieldset the form contains, with
 * "Add a model price" and a "Remove" button per row.
 */
export function pricingEditor(pricing: unknown): HTMLElement {
  const rows = el('div', { class: 'price-rows' });
  const box = el(
    'fieldset',
    { class: 'pricing', 'data-param': 'pricing', id: `pricing-${Math.random().toString(36).slice(2, 10)}` },
    el('legend', { text: 'Prices (USD per million tokens)' }),
    el('span', {
      class: 'hint',
      text: 'Overrides the bundled price table for the model ids listed; input and output are required, cache prices optional. Leave empty to use the bundled prices.',
    }),
    rows,
  );
  box.append(el('span', { id: `${box.id}-error`, class: 'error' }));
  let counter = 0;
  const addRow = (model = '', price: Partial<ModelPrice> = {}) => {
    if (rows.children.length >= MAX_ROWS) return;
    const n = ++counter;
    const row = el('fieldset', { class: 'price-row', 'data-price-row': String(n) });
    const legend = el('legend', { text: `Price ${rows.children.length + 1}` });
    row.append(
      legend,
      field({ name: `price-${n}-model`, label: 'Model id', value: model, param: `pricing.${n}.model` }),
      ...PRICE_COLUMNS.map((column) =>
        field({
          name: `price-${n}-${column.name}`,
          label: column.label,
          type: 'number',
          value: price[column.name] === undefined ? '' : String(price[column.name]),
          param: `pricing.${n}.${column.name}`,
        }),
      ),
      button(
        'Remove',
        () => {
          row.remove();
          renumber();
        },
        'secondary small',
        `Remove price ${model || n}`,
      ),
    );
    rows.append(row);
  };
  const renumber = () =>
    [...rows.querySelectorAll(':scope > fieldset > legend')].forEach((legend, i) => {
      legend.textContent = `Price ${i + 1}`;
    });
  if (pricing && typeof pricing === 'object')
    for (const [model, price] of Object.entries(pricing as Record<string, Partial<ModelPrice>>).slice(0, MAX_ROWS))
      addRow(model, price);
  box.append(button('Add a model price', () => addRow(), 'secondary small'));
  return box;
}

/**
 * The price table typed in `form`'s editor, checked: a model id on every row with a price, input and
 * output on every row with a model id, each price a number from 0 to 100,000, no model id twice.
 * Undefined (every error shown beside its cell) when a cell is wrong; `{}` when the editor is empty.
 */
export function pricingOf(form: HTMLFormElement): Record<string, ModelPrice> | undefined {
  const table: Record<string, ModelPrice> = {};
  const errors: FieldError[] = [];
  for (const row of form.querySelectorAll<HTMLElement>('[data-price-row]')) {
    const n = row.dataset.priceRow as string;
    const text = (name: string) =>
      (form.elements.namedItem(`price-${n}-${name}`) as HTMLInputElement | null)?.value.trim() ?? '';
    const place = row.querySelector('legend')?.textContent ?? 'A price';
    const model = text('model');
    const typed = PRICE_COLUMNS.filter((c) => text(c.name) !== '');
    if (model === '' && typed.length === 0) continue; // an empty row is ignored
    if (model === '') {
      errors.push({ param: `pricing.${n}.model`, message: `${place}: enter the model id, such as claude-sonnet-4-5.` });
    } else if (model.length > 256 || /\s/.test(model)) {
      errors.push({
        param: `pricing.${n}.model`,
        message: `${place}: a model id has no spaces and at most 256 characters.`,
      });
    } else if (Object.hasOwn(table, model)) {
      errors.push({ param: `pricing.${n}.model`, message: `${place}: ${model} is priced twice; keep one row.` });
    }
    const price: Partial<ModelPrice> = {};
    for (const column of PRICE_COLUMNS) {
      const value = text(column.name);
      if (value === '') {
        if (column.required)
          errors.push({
            param: `pricing.${n}.${column.name}`,
            message: `${place}: enter the ${column.label.toLowerCase()} price (0 if free).`,
          });
        continue;
      }
      const amount = Number(value);
      if (!Number.isFinite(amount) || amount < 0 || amount > MAX_PRICE) {
        errors.push({
          param: `pricing.${n}.${column.name}`,
          message: `${place}: the ${column.label.toLowerCase()} price must be a number of dollars from 0 to 100,000 per million tokens, such as 3 or 0.3.`,
        });
        continue;
      }
      price[column.name] = amount;
    }
    if (model !== '') table[model] = price as ModelPrice;
  }
  if (errors.length > 0) {
    showErrors(form, errors);
    return undefined;
  }
  return table;
}

/** A provider's price table in words, for its card: "claude-x: $3 in, $15 out per million tokens". */
export function pricingSummary(pricing: unknown): string {
  const entries = pricing && typeof pricing === 'object' ? Object.entries(pricing as Json) : [];
  if (entries.length === 0) return 'Prices: the bundled price table';
  const usd = (n: unknown) => `$${Number(n).toLocaleString('en-US', { maximumFractionDigits: 6 })}`;
  return `Prices (USD per million tokens): ${entries
    .map(([model, p]) => {
      const price = p as Partial<ModelPrice>;
      const cache = [
        price.cacheWrite === undefined ? '' : `${usd(price.cacheWrite)} cache write`,
        price.cacheRead === undefined ? '' : `${usd(price.cacheRead)} cache read`,
      ].filter(Boolean);
      return `${model}: ${usd(price.input)} in, ${usd(price.output)} out${cache.length ? `, ${cache.join(', ')}` : ''}`;
    })
    .join('; ')}`;
}
