/** One request's record (CONTRACT section 9), as logged and as stored by `@gw/catalog`. */
export type { RequestRecord } from '@gw/catalog';
