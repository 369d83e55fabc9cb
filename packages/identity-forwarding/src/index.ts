import QuickLRU from 'quick-lru';
export const probe = (): number => new QuickLRU<string, number>({ maxSize: 2 }).maxSize;
