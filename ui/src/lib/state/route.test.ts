import { describe, expect, it } from 'vitest';
import { hashOf, parseRoute, SETTINGS_SECTIONS, type Route } from './route';

describe('routes', () => {
  it('read back what they write, for every view', () => {
    const routes: Route[] = [
      { view: 'chat', agentId: 'agent-1f2e' },
      { view: 'tools' },
      ...SETTINGS_SECTIONS.map((section) => ({ view: 'settings' as const, section })),
    ];
    for (const r of routes) expect(parseRoute(hashOf(r))).toEqual(r);
    expect(hashOf({ view: 'chat', agentId: 'agent-1' })).toBe('#/agent/agent-1');
    expect(hashOf({ view: 'settings', section: 'mcp' })).toBe('#/settings/mcp');
  });

  it('are not the token the server puts in the address, nor nothing', () => {
    expect(parseRoute('#token=abc123')).toBeNull();
    expect(parseRoute('')).toBeNull();
    expect(parseRoute('#/nowhere')).toBeNull();
  });

  it('open the first settings section for an unknown or missing one', () => {
    expect(parseRoute('#/settings')).toEqual({ view: 'settings', section: 'providers' });
    expect(parseRoute('#/settings/colours')).toEqual({ view: 'settings', section: 'providers' });
  });

  it('leave a query after the view alone', () => {
    expect(parseRoute('#/agent/agent-2?token=abc')).toEqual({ view: 'chat', agentId: 'agent-2' });
  });
});
