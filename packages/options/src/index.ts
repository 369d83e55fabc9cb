/**
 * @gw/options: the option checks every @gw factory shares, so a misspelt option is refused the same
 * way everywhere: at the factory call, named as the caller wrote it, with the spelling to write.
 */

/** An option's name with case, `_` and `-` set aside: `base_url`, `baseURL` and `baseUrl` compare alike. */
function looseName(name: string): string {
  return name.replace(/[_-]/g, '').toLowerCase();
}

/**
 * Refuses a field of `value` that is not one of `allowed`, naming it as the caller wrote it, with
 * the option to write instead when it is another spelling of one (`apikeys`, `jwt_validation`,
 * `base_url`, `allowed_hosts`), else the list of allowed ones. Throws a `TypeError`.
 */
export function rejectUnknownOptions(value: object, allowed: readonly string[], where: string): void {
  for (const field of Object.keys(value)) {
    if (allowed.includes(field)) continue;
    const near = allowed.find((a) => looseName(a) === looseName(field));
    throw new TypeError(
      `${where} has an unknown option "${field.slice(0, 64)}"${near ? `; did you mean "${near}"?` : `; the options are ${allowed.join(', ')}.`}`,
    );
  }
}
