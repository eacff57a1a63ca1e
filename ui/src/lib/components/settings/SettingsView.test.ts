import { afterEach, describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import SettingsView from './SettingsView.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import { SETTINGS_SECTIONS } from '../../state/route';
import { account } from '../../state/account.svelte';

afterEach(() => {
  setBackend(null);
  account.unavailable = [];
});

const info = { version: '0.9.0', home: '/home/sam/.engram', rest_api: { enabled: false, url: null }, user: null, unavailable: [] };

function fake() {
  return useFakeBackend({
    app_info: () => info,
    detect_local_providers: () => [],
    get_default_model: () => 'mock/mock-small',
    model_prices: () => [],
    reranker_status: () => ({ enabled: true, dir: null, dir_from_env: false, loaded: false, error: null }) as never,
    list_mcp_servers: () => [],
  });
}

const props = { providers: [], onproviderschange: () => {}, onimported: () => {} };

describe('SettingsView', () => {
  it('has a side menu with a link to each section, the open one marked', () => {
    fake();
    render(SettingsView, { ...props, section: 'mcp' });
    const menu = screen.getByRole('navigation', { name: 'Settings' });
    const links = within(menu).getAllByRole('link');
    expect(links.map((l) => l.textContent)).toEqual([
      'Providers',
      'Models & prices',
      'Search',
      'MCP servers',
      'Memory for AI tools',
      'Folders',
      'Export & import',
      'REST API',
      'About',
    ]);
    // A browser tab is its server's: only the desktop app has the Server section.
    expect(links.map((l) => l.getAttribute('href'))).toEqual(
      SETTINGS_SECTIONS.filter((s) => s !== 'server').map((s) => `#/settings/${s}`),
    );
    expect(within(menu).getByRole('link', { current: 'page' })).toHaveTextContent('MCP servers');
  });

  it('shows one section at a time', async () => {
    fake();
    const { rerender } = render(SettingsView, { ...props, section: 'providers' });
    expect(screen.getByRole('heading', { level: 1, name: 'Model providers' })).toBeInTheDocument();
    expect(screen.queryByTestId('mcp-settings')).toBeNull();

    const headings: [typeof SETTINGS_SECTIONS[number], string][] = [
      ['models', 'Models and prices'],
      ['search', 'Search'],
      ['mcp', 'MCP servers'],
      ['transfer', 'Export and import'],
      ['api', 'REST API'],
      ['about', 'About Engram'],
    ];
    for (const [section, title] of headings) {
      await rerender({ ...props, section });
      expect(screen.getAllByRole('heading', { level: 1 }).map((h) => h.textContent)).toEqual([title]);
      expect(screen.getByTestId('settings')).toHaveAttribute('data-section', section);
    }
    expect(await screen.findByTestId('about-version')).toHaveTextContent('0.9.0');
  });

  it('says the REST API is what a browser window talks through', async () => {
    fake();
    render(SettingsView, { ...props, section: 'api' });
    expect(await screen.findByTestId('rest-state')).toHaveTextContent('this window talks to Engram through it');
  });

  it('leaves out what a shared server does not offer, and opens the first section it does', async () => {
    fake();
    account.unavailable = ['folders', 'mcp', 'built_in_models', 'provider_setup', 'reranker', 'tool_python'];
    render(SettingsView, { ...props, section: 'folders' });
    const menu = screen.getByRole('navigation', { name: 'Settings' });
    expect(within(menu).getAllByRole('link').map((l) => l.textContent)).toEqual([
      'Models & prices',
      'Export & import',
      'REST API',
      'About',
    ]);
    // An old address of a section not offered lands on the first one: prices, without the
    // built-in models (this machine's files, not the server's).
    expect(screen.getByTestId('settings')).toHaveAttribute('data-section', 'models');
    expect(within(menu).getByRole('link', { current: 'page' })).toHaveTextContent('Models & prices');
    expect(screen.queryByTestId('mcp-settings')).toBeNull();
    expect(screen.getByRole('heading', { level: 1, name: 'Models and prices' })).toBeInTheDocument();
    expect(screen.queryByTestId('builtin-models')).toBeNull();
  });
});
