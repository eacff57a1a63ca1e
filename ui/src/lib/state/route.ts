/**
 * The app's views as addresses in the URL fragment, so the browser's Back and Forward move
 * between them and a reload opens the same view:
 *
 *   #/agent/<id>           an agent's conversation
 *   #/settings/<section>   one section of the settings
 *   #/tools                the tools
 *
 * The fragment also carries `#token=…` once, when `engram serve --show-token` opens the app;
 * `takeToken` removes it before any route is read, and a fragment that does not start with `/`
 * is no route.
 */

export const SETTINGS_SECTIONS = ['providers', 'models', 'search', 'mcp', 'memory-server', 'folders', 'transfer', 'api', 'server', 'about'] as const;
export type SettingsSection = (typeof SETTINGS_SECTIONS)[number];

export type Route =
  | { view: 'chat'; agentId: string | null }
  | { view: 'settings'; section: SettingsSection }
  | { view: 'tools' };

export function isSection(s: string): s is SettingsSection {
  return (SETTINGS_SECTIONS as readonly string[]).includes(s);
}

/** The route a fragment names, or `null` when it names none (empty, a token, unknown). */
export function parseRoute(hash: string): Route | null {
  const path = hash.replace(/^#/, '').split('?')[0]!;
  if (!path.startsWith('/')) return null;
  const parts = path.split('/').filter(Boolean).map(safeDecode);
  const [head, arg] = parts;
  if (head === 'agent') return { view: 'chat', agentId: arg || null };
  if (head === 'tools') return { view: 'tools' };
  if (head === 'settings') return { view: 'settings', section: arg && isSection(arg) ? arg : 'providers' };
  return null;
}

/** The fragment for a route, `#/…`. */
export function hashOf(route: Route): string {
  switch (route.view) {
    case 'chat':
      return route.agentId ? `#/agent/${encodeURIComponent(route.agentId)}` : '#/';
    case 'settings':
      return `#/settings/${route.section}`;
    case 'tools':
      return '#/tools';
  }
}

export function sameRoute(a: Route, b: Route): boolean {
  return hashOf(a) === hashOf(b);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
