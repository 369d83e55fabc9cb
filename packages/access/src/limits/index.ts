export * from './anthropic-prices';
export * from './pricing';
export * from './limit-rules';
export * from './counter-store';
export * from './redis-counter-store';
export * from './limiter';
