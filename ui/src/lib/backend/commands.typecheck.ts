/*
 * Type-level checks of the generated command types (`../bindings/commands.ts`): each line
 * marked `@ts-expect-error` must stay an error, so `npm run check` fails if a wrong command
 * or argument ever type-checks again. Nothing here runs.
 */
import type { Backend } from './backend';

export async function typecheckCommands(b: Backend): Promise<void> {
  // @ts-expect-error a misspelt command
  await b.call('updat_block', { agent_id: 'a', label: 'human', patch: {} });
  // @ts-expect-error a misspelt argument
  await b.call('update_block', { agent_id: 'a', lable: 'human', patch: {} });
  // @ts-expect-error a missing argument
  await b.call('get_agent');
  // @ts-expect-error a result read as the wrong type (`cancel_run` answers a count)
  const stopped: string = await b.call('cancel_run', { agent_id: 'a' });
  // @ts-expect-error a run command is not a call
  await b.call('send_message', { agent_id: 'a', text: 'hi' });
  // @ts-expect-error a run's arguments are checked too
  await b.run('edit_and_resend', { agent_id: 'a', text: 'hi' }, () => {});
  // Commands without arguments, or with only optional ones, may be called without any.
  const agents = await b.call('list_agents');
  await b.call('set_up_tool_python');
  void [stopped, agents];
}
