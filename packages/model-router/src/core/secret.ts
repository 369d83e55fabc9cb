import { inspect } from 'node:util';

/** A provider key that prints as `[redacted]` (string, JSON, `util.inspect`). */
export class ProviderKey {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The key itself, for the upstream request header only. */
  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return '[redacted]';
  }

  toJSON(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return '[redacted]';
  }
}
