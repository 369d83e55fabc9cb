/**
 * `static` upstream credentials (CONTRACT section 15): a shared service header map, validated
 * (values may be `${VAR}` references the host resolved before). The values are secret: printing
 * the object shows only the header names.
 */
import { inspect } from 'node:util';
import type { StaticUpstreamAuth } from './config';
import { validateUpstreamAuth } from './validate';

/** The validated header map of a `static` server (see the module). */
export class StaticHeaders {
  readonly #headers: Readonly<Record<string, string>>;

  /**
   * @param auth the server's `upstream_auth` (`type: "static"`), checked with {@link validateUpstreamAuth}.
   * @param where where it comes from, for the error message. Default `"upstream_auth"`.
   */
  constructor(auth: StaticUpstreamAuth, where = 'upstream_auth') {
    const checked = validateUpstreamAuth(auth, where);
    if (checked.type !== 'static') throw new TypeError(`${where}: "type" must be "static" for StaticHeaders.`);
    this.#headers = Object.freeze({ ...checked.headers });
  }

  /** The headers to send (names as configured). Secret values. */
  get headers(): Readonly<Record<string, string>> {
    return this.#headers;
  }

  /** The header names only. */
  toJSON(): Record<string, string> {
    return Object.fromEntries(Object.keys(this.#headers).map((name) => [name, '[redacted]']));
  }

  /** Prints the header names only. */
  [inspect.custom](): string {
    return `StaticHeaders ${JSON.stringify(this.toJSON())}`;
  }

  /** Prints the header names only. */
  toString(): string {
    return `StaticHeaders ${JSON.stringify(this.toJSON())}`;
  }
}
