import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { gatewayConfigSchema, type GatewayConfig } from './schema';

/** A config problem: its message is one line naming the field and the reason. */
export class ConfigError extends Error {
  readonly code = 'invalid_config';
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}/g;

function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${String(part)}` : String(part)),
    '',
  );
}

/** Replaces `${VAR}` and `${VAR:-default}` in every string value; an unset `${VAR}` is an error. */
export function substituteVariables(value: unknown, env: NodeJS.ProcessEnv, path: (string | number)[] = []): unknown {
  if (typeof value === 'string') {
    return value.replace(
      VARIABLE,
      (_match, name: string, hasDefault: string | undefined, fallback: string | undefined) => {
        const set = env[name];
        if (hasDefault !== undefined) return set === undefined || set === '' ? (fallback ?? '') : set;
        if (set === undefined)
          throw new ConfigError(`config ${pathText(path) || '(root)'}: the environment variable ${name} is not set.`);
        return set;
      },
    );
  }
  if (Array.isArray(value)) return value.map((item, index) => substituteVariables(item, env, [...path, index]));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, substituteVariables(item, env, [...path, key])]),
    );
  }
  return value;
}

function describe(issue: z.core.$ZodIssue): string {
  const where = pathText(issue.path) || '(root)';
  if (issue.code === 'unrecognized_keys') return `config ${where}: unknown field "${issue.keys[0]}".`;
  if (issue.code === 'invalid_union' || issue.code === 'invalid_value') {
    return `config ${where}: ${issue.message.replace(/^Invalid input: /, '')}.`;
  }
  return `config ${where}: ${issue.message}.`;
}

/** Validates a parsed config object (after variable substitution). */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv): GatewayConfig {
  const substituted = substituteVariables(raw, env);
  const result = gatewayConfigSchema.safeParse(substituted);
  if (!result.success) throw new ConfigError(describe(result.error.issues[0] as z.core.$ZodIssue));
  return result.data;
}

/** Reads, substitutes and validates the JSON config file at `path`. */
export function loadConfigFile(path: string, env: NodeJS.ProcessEnv): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`config: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`config: ${path} is not valid JSON (${(error as Error).message.split('\n')[0]}).`);
  }
  return parseConfig(raw, env);
}
