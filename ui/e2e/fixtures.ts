import { expect, test as base, type Page } from '@playwright/test';

export { expect };

export const engram = {
  get url(): string {
    return process.env.E2E_ENGRAM_URL!;
  },
  get token(): string {
    return process.env.E2E_ENGRAM_TOKEN!;
  },
  get mockBase(): string {
    return process.env.E2E_MOCK_BASE!;
  },
  /** The `engram` binary and the data directory `engram serve` runs on. */
  get bin(): string {
    return process.env.E2E_ENGRAM_BIN!;
  },
  get home(): string {
    return process.env.E2E_ENGRAM_HOME!;
  },
  /** The stand-in for Hugging Face that catalogue downloads come from (see global-setup). */
  get llmMirror(): string {
    return process.env.E2E_LLM_MIRROR!;
  },
  /** The test MCP server binary (`cargo build -p engram-mcp --bins`). */
  get mockMcp(): string {
    return process.env.E2E_MOCK_MCP!;
  },
};

/** A second Engram as a newcomer's machine may be: an empty home and no keychain at all. */
export const bare = {
  get url(): string {
    return process.env.E2E_BARE_URL!;
  },
  get token(): string {
    return process.env.E2E_BARE_TOKEN!;
  },
  /** The refusing model hub it downloads from; `GET /_count` says how often it was asked. */
  get hub(): string {
    return process.env.E2E_OFFLINE_HUB!;
  },
};

/** A third Engram, empty like `bare` and offline, but with a keychain (in memory). */
export const keyed = {
  get url(): string {
    return process.env.E2E_KEYED_URL!;
  },
  get token(): string {
    return process.env.E2E_KEYED_TOKEN!;
  },
};

/** Calls an app command directly (setup shortcuts; the UI under test is not involved). */
export async function command<T = unknown>(name: string, args: object = {}): Promise<T> {
  const res = await fetch(`${engram.url}/app/${name}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${engram.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(args),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${name}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

/** The mock provider, as the provider test sets it up through the UI. */
export async function ensureProvider(): Promise<void> {
  await command('set_provider', {
    setup: { name: 'mock', kind: 'open_ai', base_url: engram.mockBase, api_key: 'sk-test', default_model: 'mock/mock-small' },
  });
  await command('set_default_model', { handle: 'mock/mock-small' });
}

export async function createAgent(name: string, loop_style = 'tool_loop'): Promise<string> {
  const a = await command<{ id: string }>('create_agent', {
    new: {
      name,
      description: '',
      loop_style,
      llm: { model: 'mock/mock-small', context_window: 8192 },
      blocks: [
        { label: 'persona', value: 'I am a test companion.', read_only: false },
        { label: 'human', value: '', read_only: false },
      ],
      block_ids: [],
    },
  });
  return a.id;
}

/** Opens the app signed in, the way `engram serve --show-token` tells people to, and waits
 *  for its first load: until then a link's address is not followed (the window then shows
 *  where it opened), so a click on one would be lost. */
export async function openApp(page: Page): Promise<void> {
  await page.goto(`${engram.url}/#token=${engram.token}`);
  await expect(page.locator('.shell[data-loaded=true]')).toBeAttached();
}

export async function openAgent(page: Page, name: string): Promise<void> {
  await agentItem(page, name).getByTestId('agent-open').click();
  await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
}

/** Opens one section of the settings from the sidebar and its side menu. */
export async function openSettings(page: Page, section: 'providers' | 'models' | 'search' | 'mcp' | 'memory-server' | 'folders' | 'transfer' | 'api' | 'about'): Promise<void> {
  await page.getByTestId('nav-settings').click();
  await page.getByTestId(`settings-nav-${section}`).click();
  await expect(page.getByTestId('settings')).toHaveAttribute('data-section', section);
}

export function agentItem(page: Page, name: string) {
  return page.locator(`[data-testid=agent-item][data-agent-name="${name}"]`);
}

export const test = base;
