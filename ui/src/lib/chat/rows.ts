import type { Compaction, Message } from '../backend/types';

/**
 * One row of the virtualised message list. Rows are built from stored data only (messages and
 * compaction markers), so a reload or an agent switch shows the same list.
 */
export type Row =
  | { kind: 'head'; key: string }
  | { kind: 'date'; key: string; label: string; iso: string }
  | { kind: 'compaction'; key: string; compaction: Compaction }
  | { kind: 'window-start'; key: string }
  | { kind: 'message'; key: string; message: Message }
  | { kind: 'live'; key: string }
  | { kind: 'error'; key: string };

/** The local calendar day of a time, as `YYYY-MM-DD`. */
export function dayKey(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** A date separator's label: "Today", "Yesterday", or the weekday and date (year when not this one). */
export function dayLabel(d: Date, now: Date = new Date()): string {
  const today = dayKey(now);
  const yesterday = dayKey(new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1));
  const k = dayKey(d);
  if (k === today) return 'Today';
  if (k === yesterday) return 'Yesterday';
  return d.toLocaleDateString(undefined, {
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    ...(d.getFullYear() === now.getFullYear() ? {} : { year: 'numeric' }),
  });
}

/** A message's time: the clock time today, with the date on any other day. */
export function messageTime(iso: string, now: Date = new Date()): string {
  const d = new Date(iso);
  const time = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (dayKey(d) === dayKey(now)) return time;
  const date = d.toLocaleDateString(undefined, {
    day: 'numeric',
    month: 'short',
    ...(d.getFullYear() === now.getFullYear() ? {} : { year: 'numeric' }),
  });
  return `${date}, ${time}`;
}

/**
 * The text a person wrote. Letta stores user turns as a JSON envelope
 * (`{"type": "user_message", "message": "…", "time": "…"}`), and agent files imported from
 * Letta keep it; the chat shows the message inside. Anything else is shown as it is.
 */
export function userText(content: string): string {
  const t = content.trimStart();
  if (!t.startsWith('{')) return content;
  try {
    const v = JSON.parse(t) as { type?: unknown; message?: unknown };
    if (v && v.type === 'user_message' && typeof v.message === 'string') return v.message;
  } catch {
    // Not JSON after all: the person typed a brace.
  }
  return content;
}

export interface RowOptions {
  /** Whether a head row (start-of-conversation or loading note) goes first. */
  head: boolean;
  /** Whether a row for the reply streaming in goes last. */
  live: boolean;
  /** Whether an error row goes last. */
  error: boolean;
  /** Whether the messages reach the newest stored one; then a conversation whose messages
   *  all left the context window (a new one was started) ends with its divider. */
  atEnd?: boolean;
}

/**
 * The list's rows: a date separator before the first message of each local day, a compaction
 * divider after the message it follows (by `seq`), a "new conversation" divider where the
 * context window starts again, then the live reply and the error, if any.
 */
export function buildRows(messages: Message[], compactions: Compaction[], opts: RowOptions): Row[] {
  const rows: Row[] = [];
  if (opts.head) rows.push({ kind: 'head', key: 'head' });
  const bySeq = new Map<number, Compaction>();
  for (const c of compactions) bySeq.set(c.seq, c);
  let day = '';
  const pending = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  let next = 0;
  let prev: Message | null = null;
  for (const m of messages) {
    // Dividers whose message is hidden (a tool result) go before the next shown message.
    while (next < pending.length && pending[next]!.seq < m.seq) {
      rows.push(divider(pending[next++]!));
    }
    const d = new Date(m.created_at);
    const k = dayKey(d);
    if (k !== day) {
      day = k;
      rows.push({ kind: 'date', key: `date-${k}`, label: dayLabel(d), iso: m.created_at });
    }
    // The window starts again after messages outside it: a new conversation, unless a
    // summary divider already says why they left.
    if (prev && m.in_context && !prev.in_context && lastBesidesDates(rows)?.kind !== 'compaction') {
      rows.push({ kind: 'window-start', key: `window-start-${m.id}` });
    }
    rows.push({ kind: 'message', key: m.id, message: m });
    if (pending[next]?.seq === m.seq) rows.push(divider(pending[next++]!));
    prev = m;
  }
  // Dividers after the last message shown (which folded hidden messages) close the list.
  if (messages.length > 0) while (next < pending.length) rows.push(divider(pending[next++]!));
  // A new conversation with nothing said yet.
  if (opts.atEnd && prev && !prev.in_context && rows.at(-1)?.kind !== 'compaction') {
    rows.push({ kind: 'window-start', key: 'window-start-end' });
  }
  if (opts.live) rows.push({ kind: 'live', key: 'live' });
  if (opts.error) rows.push({ kind: 'error', key: 'error' });
  return rows;
}

function lastBesidesDates(rows: Row[]): Row | undefined {
  for (let i = rows.length - 1; i >= 0; i--) if (rows[i]!.kind !== 'date') return rows[i];
  return undefined;
}

function divider(c: Compaction): Row {
  return { kind: 'compaction', key: `compaction-${c.seq}`, compaction: c };
}

/** Merges `page` into `messages` by id (page wins), ordered by `seq`. */
export function mergeMessages(messages: Message[], page: Message[]): Message[] {
  const byId = new Map(messages.map((m) => [m.id, m]));
  for (const m of page) byId.set(m.id, m);
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
}

/** Merges compaction markers by `seq`, ordered. */
export function mergeCompactions(a: Compaction[], b: Compaction[]): Compaction[] {
  const bySeq = new Map(a.map((c) => [c.seq, c]));
  for (const c of b) bySeq.set(c.seq, c);
  return [...bySeq.values()].sort((x, y) => x.seq - y.seq);
}

/**
 * Keeps at most `max` messages, dropping from the end away from where the reader is: `'start'`
 * drops the oldest (the reader went down), `'end'` the newest (the reader went up). Returns the
 * kept messages and whether any were dropped.
 */
export function trimWindow(messages: Message[], max: number, drop: 'start' | 'end'): [Message[], boolean] {
  if (messages.length <= max) return [messages, false];
  return drop === 'start' ? [messages.slice(messages.length - max), true] : [messages.slice(0, max), true];
}
