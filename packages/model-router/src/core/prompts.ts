import { MissingVariableError, PromptNotFoundError } from './errors';

/** A stored prompt template (the config's `prompts`). */
export interface PromptTemplate {
  id: string;
  /** `@slug` of the provider. */
  provider: string;
  model: string;
  messages: { role: string; content: unknown }[];
  [field: string]: unknown;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

function fill(value: string, variables: Record<string, unknown>): string {
  return value.replace(PLACEHOLDER, (_m, name: string) => {
    // Only the request's own variables: a name such as "constructor" never reaches Object.prototype.
    const v = Object.hasOwn(variables, name) ? variables[name] : undefined;
    if (v === undefined || v === null)
      throw new MissingVariableError(`The prompt needs the variable "${name}".`, { param: `variables.${name}` });
    return typeof v === 'string' ? v : JSON.stringify(v);
  });
}

function fillContent(content: unknown, variables: Record<string, unknown>): unknown {
  if (typeof content === 'string') return fill(content, variables);
  if (Array.isArray(content)) {
    return content.map((part) =>
      typeof part === 'object' &&
      part !== null &&
      (part as { type?: unknown }).type === 'text' &&
      typeof (part as { text?: unknown }).text === 'string'
        ? { ...part, text: fill((part as { text: string }).text, variables) }
        : part,
    );
  }
  return content;
}

/** Where prompt templates come from when they change while the gateway runs: a lookup by id. */
export type PromptResolver = (id: string) => PromptTemplate | undefined;

/** Stored prompts by id. */
export class PromptStore {
  private readonly prompts = new Map<string, PromptTemplate>();
  private resolver: PromptResolver | undefined;

  /** A store over a host's own lookup (a live catalog), read on every render. */
  static fromResolver(resolve: PromptResolver): PromptStore {
    if (typeof resolve !== 'function')
      throw new TypeError('resolvePrompt must be a function (id) => template | undefined.');
    const store = new PromptStore();
    store.resolver = resolve;
    return store;
  }

  constructor(templates: readonly PromptTemplate[] = []) {
    for (const template of templates) {
      if (typeof template.id !== 'string' || !Array.isArray(template.messages))
        throw new TypeError('Each prompt needs an id and messages.');
      if (this.prompts.has(template.id)) throw new TypeError(`prompts has two templates with the id "${template.id}".`);
      this.prompts.set(template.id, template);
    }
  }

  /**
   * The chat completion body of prompt `id`: its messages with `{{name}}` filled from
   * `variables`; request fields other than `variables` override the template's.
   */
  render(id: string, request: Record<string, unknown>): Record<string, unknown> {
    const template = this.resolver ? this.resolver(id) : this.prompts.get(id);
    if (!template) throw new PromptNotFoundError(`No prompt is stored as "${id.slice(0, 64)}".`, { param: 'promptId' });
    const variables = (
      typeof request.variables === 'object' && request.variables !== null ? request.variables : {}
    ) as Record<string, unknown>;
    const { id: _id, provider, model, messages, ...defaults } = template;
    const { variables: _variables, ...overrides } = request;
    return {
      ...defaults,
      model: `@${provider.replace(/^@/, '')}/${model}`,
      messages: messages.map((m) => ({ ...m, content: fillContent(m.content, variables) })),
      ...overrides,
    };
  }
}
