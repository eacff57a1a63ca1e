import { backend } from '../backend';
import type { ProviderInfo } from '../backend/types';

/**
 * Chat models that can be used now, best first: the default for new agents, each provider's
 * default, then the built-in models — each checked by the engine (`check_model`, no network),
 * without repeats and without `except`. What the window offers an agent whose model is not set up.
 */
export async function usableModels(providers: ProviderInfo[], except?: string): Promise<string[]> {
  const [fallback, local] = await Promise.all([
    backend()
      .call('get_default_model')
      .catch(() => null),
    backend()
      .call('list_local_models')
      .catch(() => []),
  ]);
  const handles = [
    ...new Set(
      [fallback, ...providers.map((p) => p.default_model), ...local.map((m) => m.handle)].filter(
        (h): h is string => !!h && h !== except,
      ),
    ),
  ];
  const checks = await Promise.all(handles.map((h) => backend().call('check_model', { handle: h })));
  return handles.filter((_, i) => checks[i] === null);
}
