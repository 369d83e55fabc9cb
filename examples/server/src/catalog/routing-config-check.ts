import { readConfigObject } from '@gw/model-router';

/**
 * Why a named config's `config` cannot be used as `x-gateway-config` (CONTRACT section 17), in the
 * words the request would get (`targets[1]: weight must be …`), or undefined when it can. The
 * admin API and the config file refuse what every request using the config would be refused.
 */
export function routingConfigRefusal(config: unknown): string | undefined {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return 'must be a JSON object';
  try {
    readConfigObject(config as Record<string, unknown>);
    return undefined;
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (status !== 400) throw error;
    // The request's words without the header's name, and without the closing full stop (the
    // admin API and the config file add their own context).
    return (error as Error).message.replace(/^x-gateway-config: /, '').replace(/\.$/, '');
  }
}
