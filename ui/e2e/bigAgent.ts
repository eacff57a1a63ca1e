import { command, createAgent } from './fixtures';

/** What the generated history holds, for tests to look for. */
export interface BigHistory {
  id: string;
  /** Every message's text and time, oldest first (tool results included). */
  messages: { content: string; created_at: string; role: string }[];
}

const MINUTE = 60_000;

/**
 * Builds an agent with `n` messages spread over the past year (one every 72 minutes for
 * 5,000), every tenth turn a tool call with its result, user turns in Letta's JSON envelope
 * now and then (as imported Letta agents have them), everything but the newest 60 folded into a
 * summary. Made the fast way a user could too: an agent exported by Engram, its history
 * replaced, imported back as an Agent File.
 */
export async function importBigAgent(
  name: string,
  n: number,
  marks: Record<number, string> = {},
  /** Long notes (a paragraph each) that reflow when the window's width changes. */
  opts: { long?: boolean } = {},
): Promise<BigHistory> {
  const seed = await createAgent(`${name} (seed)`);
  const file = JSON.parse(await command<string>('export_agent', { agent_id: seed })) as {
    agents: { name: string }[];
    engram: { agents: Record<string, { summary: string | null; messages: unknown[] }> };
  };
  await command('delete_agent', { agent_id: seed });
  file.agents[0]!.name = name;
  const ext = Object.values(file.engram.agents)[0]!;
  const step = (365 * 24 * 60 * MINUTE) / n;
  const start = Date.now() - 365 * 24 * 60 * MINUTE;
  const messages: {
    role: string;
    kind: string;
    content: string;
    reasoning: null;
    tool_calls: { id: string; name: string; arguments: string }[];
    tool_call_id: string | null;
    tool_name: string | null;
    run_id: null;
    step_id: null;
    in_context: boolean;
    created_at: string;
  }[] = [];
  const base = { kind: 'chat', reasoning: null, tool_calls: [], tool_call_id: null, tool_name: null, run_id: null, step_id: null };
  for (let i = 0; messages.length < n; i++) {
    const at = (k: number) => new Date(start + (messages.length + k) * step).toISOString();
    const mark = (text: string) => (marks[messages.length] ? `${text} ${marks[messages.length]}` : text);
    const note = `Note ${i}: the garden needs watering on day ${i % 365}.`;
    const said = mark(
      i === 0
        ? 'The very first message of the year.'
        : opts.long
          ? `${note} ${'The tomatoes along the south fence want water early, before the sun is on them, and the beans want tying up again. '.repeat(3)}`.trim()
          : note,
    );
    const user = i % 7 === 3 ? JSON.stringify({ type: 'user_message', message: said, time: at(0) }) : said;
    messages.push({ ...base, role: 'user', content: user, in_context: false, created_at: at(0) });
    if (i % 10 === 5 && messages.length + 2 < n) {
      const id = `call-${i}`;
      messages.push({
        ...base,
        role: 'assistant',
        content: '',
        tool_calls: [{ id, name: 'archival_memory_search', arguments: JSON.stringify({ query: `garden day ${i}` }) }],
        in_context: false,
        created_at: at(0),
      });
      messages.push({
        ...base,
        role: 'tool',
        content: JSON.stringify({ status: 'OK', message: `Nothing stored about garden day ${i}.`, time: at(0) }),
        tool_call_id: id,
        tool_name: 'archival_memory_search',
        in_context: false,
        created_at: at(0),
      });
    }
    if (messages.length < n) {
      messages.push({ ...base, role: 'assistant', content: mark(`Noted (${i}). I will remind you.`), in_context: false, created_at: at(0) });
    }
  }
  messages.slice(-60).forEach((m) => (m.in_context = true));
  ext.summary = 'A year of garden notes: the user waters on schedule and asks for reminders.';
  ext.messages = messages;
  const report = await command<{ agents: string[] }>('import_agent_file', { contents: JSON.stringify(file), file_name: `${name}.af` });
  return { id: report.agents[0]!, messages: messages.map((m) => ({ content: m.content, created_at: m.created_at, role: m.role })) };
}
