import { developmentBanner } from '../../src/start-gateway';

describe('the development start-up banner (stdout is a terminal)', () => {
  it('says the console address and the admin key in a few readable lines', () => {
    const banner = developmentBanner({
      consoleUrl: 'http://127.0.0.1:8787/console',
      adminUrl: 'http://127.0.0.1:8787/admin/v1',
      adminKey: 'dev-admin-key-0123456789abcdef',
      demoApiKey: 'gw-demo-key',
    });
    const lines = banner.trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(12);
    expect(banner).toContain('Console      http://127.0.0.1:8787/console');
    expect(banner).toContain('Admin key    dev-admin-key-0123456789abcdef');
    expect(banner).toContain('Demo API key gw-demo-key');
    expect(banner).toContain('set GATEWAY_ADMIN_KEY to keep one');
    // Not a JSON line: a person reads it.
    expect(banner.trim().startsWith('{')).toBe(false);
    expect(new Set(lines.map((l) => l.length)).size).toBe(1);
  });
});
