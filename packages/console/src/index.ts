/**
 * @gw/console: the gateway's web console. Static pages built with the package, sign-in with the
 * admin credential into a signed session cookie, CSRF-checked calls to the admin API of
 * `@gw/catalog` (its only back end).
 */
export * from './core/sessions';
export * from './core/console';
export { gatewayConsole } from './express';
