import { ACCESS_MODES, type AccessMode } from '@gw/access';
import {
  InvalidRecordError,
  ManagedByConfigFileError,
  RecordNotFoundError,
  type CatalogSnapshot,
  type CatalogStore,
} from '@gw/catalog';

/** Where the access mode in force comes from. */
export type AccessModeSource = 'environment' | 'config' | 'catalog' | 'default';

/** The catalog record that holds the mode set through the admin API. */
const RECORD_SLUG = 'access-mode';

/**
 * The mode stored in a catalog snapshot (`settings/access-mode`), or undefined when none is. A
 * stored value that is not a mode fails closed (`policies`) and is reported to `onInvalid`.
 */
export function storedAccessMode(
  snapshot: CatalogSnapshot | undefined,
  onInvalid: (message: string) => void,
): AccessMode | undefined {
  const record = snapshot?.records.get('settings')?.get(RECORD_SLUG);
  if (!record) return undefined;
  const mode = (record.data.value as { mode?: unknown } | undefined)?.mode;
  if (typeof mode === 'string' && (ACCESS_MODES as readonly string[]).includes(mode)) return mode as AccessMode;
  onInvalid(`the stored access mode is not one of ${ACCESS_MODES.join(', ')}: enforcing policies`);
  return 'policies';
}

/** What {@link accessModeSetting} reads and writes. */
export interface AccessModeSettingOptions {
  store: CatalogStore;
  /** The mode set by `GATEWAY_ACCESS_MODE` or the config file's `access.mode`: then it cannot change. */
  fixed?: { mode: AccessMode; source: 'environment' | 'config' };
  /** The mode in force on this instance now (the catalog view's). */
  current: () => AccessMode;
  /** How many access policies exist now (config file and catalog). */
  policyCount: () => number;
}

/**
 * `GET` and `PUT /admin/v1/access/mode` (CONTRACT section 10) for the admin API's `accessMode`
 * option. The answer: `mode` (in force on this instance), `source` (`environment`, `config`, `catalog` or `default`),
 * `changeable`, `policies` (how many exist) and `policiesApplied` (false in `open` and `report`
 * while policies exist: the console warns then), plus `version` and `updatedAt` of a stored mode.
 */
export function accessModeSetting(options: AccessModeSettingOptions) {
  const read = async (): Promise<Record<string, unknown>> => {
    const policies = options.policyCount();
    const base = (mode: AccessMode, source: AccessModeSource) => ({
      object: 'access_mode',
      mode,
      source,
      changeable: options.fixed === undefined,
      policies,
      policiesApplied: mode === 'policies',
    });
    if (options.fixed) return base(options.fixed.mode, options.fixed.source);
    let record: { version: number; updatedAt: string };
    try {
      record = await options.store.get('settings', RECORD_SLUG);
    } catch (error) {
      if (error instanceof RecordNotFoundError) return base('open', 'default');
      throw error;
    }
    // The mode in force on this instance (another instance's change arrives within 1 s).
    return { ...base(options.current(), 'catalog'), version: record.version, updatedAt: record.updatedAt };
  };
  return {
    read,
    write: async (mode: unknown, actor: string): Promise<void> => {
      if (options.fixed)
        throw new ManagedByConfigFileError(
          options.fixed.source === 'environment'
            ? 'The access mode is set by GATEWAY_ACCESS_MODE: change it there (and restart).'
            : 'The access mode is set by the config file\'s "access.mode": change it there (and restart).',
          'mode',
        );
      if (typeof mode !== 'string' || !(ACCESS_MODES as readonly string[]).includes(mode))
        throw new InvalidRecordError('mode must be "open", "report" or "policies".', 'mode');
      const existing = await options.store.getOpened('settings', RECORD_SLUG);
      const value = { mode };
      if (existing) await options.store.update('settings', RECORD_SLUG, { version: existing.version, value }, actor);
      else await options.store.create('settings', { slug: RECORD_SLUG, value }, actor);
    },
  };
}
