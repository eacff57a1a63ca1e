import { describe, expect, it, vi } from 'vitest';
import { httpBackend, takeToken } from './http';
import { BackendError } from './backend';
import type { Notice, RunEvent } from './types';

const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, step_count: 1 };

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

/** An SSE body delivered in awkward chunks, as a network would. */
function sse(chunks: string[]): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(enc.encode(chunk));
      c.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

describe('http backend', () => {
  it('attaches to a run in flight: its events until done, or false when none runs', async () => {
    const none = httpBackend({ base: '', token: 't', fetch: vi.fn(async () => json(null)) });
    expect(await none.attachRun({ agent_id: 'agent-1' }, () => {})).toBe(false);

    const events: RunEvent[] = [];
    const fetch = vi.fn(async () =>
      sse([
        'data: {"type":"run_started","run_id":"run-1","agent_id":"agent-1"}\n\n',
        'data: {"type":"text_delta","delta":"so far"}\n\ndata: {"type":"done","run_id":"run-1",',
        `"stop_reason":"end_turn","usage":${JSON.stringify(usage)}}\n\n`,
      ]),
    );
    const b = httpBackend({ base: 'http://x', token: 't', fetch });
    expect(await b.attachRun({ agent_id: 'agent-1' }, (e) => events.push(e))).toBe(true);
    expect(events.map((e) => e.type)).toEqual(['run_started', 'text_delta', 'done']);
    expect((fetch.mock.calls[0] as unknown as [string])[0]).toBe('http://x/app/attach_run');
  });

  it('posts the args as JSON to /app/{command} with the bearer token', async () => {
    const fetch = vi.fn(async () => json({ id: 'block-1', label: 'human' }));
    const b = httpBackend({ base: 'http://127.0.0.1:9', token: 'tok', fetch });
    const block = await b.call('update_block', { agent_id: 'agent-1', label: 'human', patch: { value: 'Bob' } });
    expect(block).toEqual({ id: 'block-1', label: 'human' });
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('http://127.0.0.1:9/app/update_block');
    expect(init.method).toBe('POST');
    expect((init.headers as Record<string, string>).Authorization).toBe('Bearer tok');
    expect(JSON.parse(init.body as string)).toEqual({ agent_id: 'agent-1', label: 'human', patch: { value: 'Bob' } });
  });

  it('answers null for unit results and {} for no args', async () => {
    const fetch = vi.fn(async () => json(null));
    const b = httpBackend({ base: '', token: null, fetch });
    expect(await b.call('delete_agent', { agent_id: 'agent-1' })).toBeNull();
    await b.call('list_agents');
    const init = (fetch.mock.calls[1] as unknown as [string, RequestInit])[1];
    expect(init.body).toBe('{}');
    expect((init.headers as Record<string, string>).Authorization).toBeUndefined();
  });

  it('maps an error body to a BackendError with its code', async () => {
    const fetch = vi.fn(async () =>
      json({ code: 'invalid_input', message: 'Exceeds 5000 character limit', details: { limit: 5000 } }, 400),
    );
    const err = await httpBackend({ base: '', token: 't', fetch })
      .call('update_block', { agent_id: 'a', label: 'human', patch: { value: 'x' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect(err).toMatchObject({ code: 'invalid_input', message: 'Exceeds 5000 character limit', details: { limit: 5000 } });
  });

  it('explains a refused token and an unknown route', async () => {
    const fetch = vi
      .fn()
      .mockResolvedValueOnce(new Response('', { status: 401 }))
      .mockResolvedValueOnce(new Response('', { status: 404 }));
    const b = httpBackend({ base: '', token: 'bad', fetch });
    await expect(b.call('list_agents')).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(b.call('list_tools')).rejects.toMatchObject({ code: 'not_supported' });
  });

  it('reports a network failure as backend_unreachable', async () => {
    const fetch = vi.fn(async () => {
      throw new TypeError('Failed to fetch');
    });
    await expect(httpBackend({ base: '', token: 't', fetch }).call('list_agents')).rejects.toMatchObject({
      code: 'backend_unreachable',
    });
  });

  it('parses a streamed run split across chunks and stops after done', async () => {
    const events: RunEvent[] = [
      { type: 'run_started', run_id: 'run-1', agent_id: 'agent-1' },
      { type: 'text_delta', delta: 'Nice to meet you, Bob!' },
      { type: 'tool_call', call: { id: 'call-1', name: 'core_memory_append', arguments: '{"label":"human"}' } },
      { type: 'done', run_id: 'run-1', stop_reason: 'end_turn', usage },
    ];
    const text = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + ': keep-alive\n\n';
    // Cut in the middle of lines and of a multi-byte-free JSON string.
    const chunks = [text.slice(0, 7), text.slice(7, 60), text.slice(60, 61), text.slice(61)];
    const fetch = vi.fn(async () => sse(chunks));
    const got: RunEvent[] = [];
    await httpBackend({ base: 'http://h', token: 't', fetch }).sendMessage(
      { agent_id: 'agent-1', text: 'my name is Bob' },
      (e) => got.push(e),
    );
    expect(got).toEqual(events);
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('http://h/app/send_message');
    expect(JSON.parse(init.body as string)).toEqual({ agent_id: 'agent-1', text: 'my name is Bob' });
    expect((init.headers as Record<string, string>).Accept).toBe('text/event-stream');
  });

  it('rejects a run that failed before it started with the JSON error', async () => {
    const fetch = vi.fn(async () => json({ code: 'not_found', message: 'no agent agent-x' }, 404));
    await expect(
      httpBackend({ base: '', token: 't', fetch }).sendMessage({ agent_id: 'agent-x', text: 'hi' }, () => {}),
    ).rejects.toMatchObject({ code: 'not_found', message: 'no agent agent-x' });
  });

  it('rejects when the stream ends before done', async () => {
    const fetch = vi.fn(async () => sse([`data: ${JSON.stringify({ type: 'text_delta', delta: 'Hi' })}\n\n`]));
    const got: RunEvent[] = [];
    await expect(
      httpBackend({ base: '', token: 't', fetch }).sendMessage({ agent_id: 'a', text: 'hi' }, (e) => got.push(e)),
    ).rejects.toMatchObject({ code: 'backend_unreachable' });
    expect(got).toEqual([{ type: 'text_delta', delta: 'Hi' }]);
  });

  it('following a run skips frames that are not events and rejects when the stream ends before done', async () => {
    const fetch = vi.fn(async () =>
      sse(['data: not json\n\n', 'data: {"no_type":1}\n\n', `data: ${JSON.stringify({ type: 'text_delta', delta: 'Hi' })}\n\n`]),
    );
    const got: RunEvent[] = [];
    await expect(
      httpBackend({ base: '', token: 't', fetch }).attachRun({ agent_id: 'a' }, (e) => got.push(e)),
    ).rejects.toMatchObject({ code: 'backend_unreachable', message: expect.stringContaining('following the run') });
    expect(got).toEqual([{ type: 'text_delta', delta: 'Hi' }]);
  });

  it('reconnects the notice stream after a drop and asks listeners to re-read', async () => {
    const n1: Notice = { type: 'memory_changed', agent_id: 'agent-1' };
    const n2: Notice = { type: 'tools_changed' };
    const fetch = vi
      .fn()
      .mockResolvedValueOnce(sse([`data: ${JSON.stringify(n1)}\n\n`]))
      .mockRejectedValueOnce(new TypeError('connection refused'))
      .mockResolvedValueOnce(sse([`data: ${JSON.stringify(n2)}\n\n`]))
      .mockImplementation(() => new Promise(() => {}));
    const got: Notice[] = [];
    const stop = httpBackend({ base: 'http://h', token: 't', fetch, retryDelay: () => 1 }).onNotice((n) => got.push(n));
    await vi.waitFor(() => expect(got).toHaveLength(3));
    stop();
    expect(got).toEqual([n1, { type: 'agents_changed' }, n2]);
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('http://h/app/notices');
    expect((init.headers as Record<string, string>).Authorization).toBe('Bearer t');
  });
});

describe('takeToken', () => {
  it('reads the token from the fragment once, keeps it and clears the address bar', () => {
    history.replaceState(null, '', '/#token=abc123');
    sessionStorage.clear();
    expect(takeToken(location, sessionStorage)).toBe('abc123');
    expect(location.hash).toBe('');
    expect(takeToken(location, sessionStorage)).toBe('abc123');
  });

  it('keeps the view named beside the token', () => {
    history.replaceState(null, '', '/#/settings/mcp?token=xyz');
    sessionStorage.clear();
    expect(takeToken(location, sessionStorage)).toBe('xyz');
    expect(location.hash).toBe('#/settings/mcp');
  });

  it('saves an export as a download named as the engine suggests', async () => {
    const fetch = vi.fn(async () => json({ file_name: 'Sam.af', contents: '{"agents":[]}' }));
    const b = httpBackend({ base: '', token: null, fetch });
    const clicked: string[] = [];
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicked.push(this.download);
    });
    URL.createObjectURL ??= () => 'blob:x';
    URL.revokeObjectURL ??= () => {};
    expect(await b.saveExport({ agent_ids: ['agent-1'], format: 'af' })).toEqual({ kind: 'download', where: 'Sam.af' });
    expect(clicked).toEqual(['Sam.af']);
    const [url, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe('/app/export_agents');
    expect(JSON.parse(init.body as string)).toEqual({ agent_ids: ['agent-1'], format: 'af' });
    expect(b.importFromDialog).toBeNull();
    click.mockRestore();
  });
});
