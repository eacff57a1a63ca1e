import { backend } from '../backend';
import type { ProviderInfo } from '../backend/types';

/**
 * Chat models that can be used now, best first: the default for new agents, each provider's
 * default, then the built-in models — each checked by the engine (`check_model`, no network),
 * without repeats and without `except`. With `agents`, only models whose context window holds
 * each of those agents' memory and tools (a move to a smaller one would be refused). What the
 * window offers an agent whose model is not set up.
 */
export async function usableModels(
  providers: ProviderInfo[],
  { except, agents = [] }: { except?: string; agents?: string[] } = {},
): Promise<string[]> {
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
  const checkFor = (handle: string) =>
    agents.length === 0
      ? backend().call('check_model', { handle })
      : Promise.all(agents.map((agent_id) => backend().call('check_model', { handle, agent_id }))).then(
          (problems) => problems.find((p) => p !== null) ?? null,
        );
  const checks = await Promise.all(handles.map(checkFor));
  return handles.filter((_, i) => checks[i] === null);
}
