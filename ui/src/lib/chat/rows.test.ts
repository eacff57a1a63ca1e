import { describe, expect, it } from 'vitest';
import { buildRows, dayLabel, mergeCompactions, messageTime, trimWindow, userText } from './rows';
import { message } from '../../test/fakeBackend';
import type { Compaction } from '../backend/types';

const at = (y: number, mo: number, d: number, h = 12, mi = 0) => new Date(y, mo - 1, d, h, mi).toISOString();
const compaction = (seq: number, summary = 'so far'): Compaction => ({ seq, summary, evicted: 3, created_at: at(2025, 1, 2) });

describe('userText', () => {
  it("unwraps Letta's user_message envelope and leaves everything else alone", () => {
    const letta = JSON.stringify({ type: 'user_message', message: 'Mina is four, not five.', time: '2026-03-02 06:04:11 PM UTC+0000' });
    expect(userText(letta)).toBe('Mina is four, not five.');
    expect(userText(`  ${letta}`)).toBe('Mina is four, not five.');
    expect(userText('{"type": "heartbeat", "reason": "x"}')).toBe('{"type": "heartbeat", "reason": "x"}');
    expect(userText('{not json')).toBe('{not json');
    expect(userText('{"message": "no type"}')).toBe('{"message": "no type"}');
    expect(userText('plain words')).toBe('plain words');
  });
});

describe('dates', () => {
  const now = new Date(2026, 10, 24, 9, 30);
  it('labels days relative to today, with the year only when it is another one', () => {
    expect(dayLabel(new Date(2026, 10, 24, 1), now)).toBe('Today');
    expect(dayLabel(new Date(2026, 10, 23, 23), now)).toBe('Yesterday');
    const earlier = dayLabel(new Date(2026, 2, 3), now);
    expect(earlier).toMatch(/3/);
    expect(earlier).not.toMatch(/2026/);
    expect(dayLabel(new Date(2024, 2, 3), now)).toMatch(/2024/);
  });

  it('shows only the time for today and the date with the time on other days', () => {
    const today = messageTime(new Date(2026, 10, 24, 8, 5).toISOString(), now);
    const before = messageTime(new Date(2026, 10, 20, 8, 5).toISOString(), now);
    expect(before.length).toBeGreaterThan(today.length);
    expect(before.endsWith(today)).toBe(true);
    expect(before).toMatch(/20/);
    expect(messageTime(new Date(2023, 0, 5, 8, 5).toISOString(), now)).toMatch(/2023/);
  });
});

describe('buildRows', () => {
  it('puts a date separator before the first message of each day', () => {
    const ms = [
      message({ id: 'a', seq: 1, created_at: at(2025, 1, 1, 9) }),
      message({ id: 'b', seq: 2, created_at: at(2025, 1, 1, 18) }),
      message({ id: 'c', seq: 3, created_at: at(2025, 1, 3, 8) }),
    ];
    const rows = buildRows(ms, [], { head: true, live: false, error: false });
    expect(rows.map((r) => r.kind)).toEqual(['head', 'date', 'message', 'message', 'date', 'message']);
    // Keys are stable and unique, so the list keeps measured sizes across updates.
    expect(new Set(rows.map((r) => r.key)).size).toBe(rows.length);
  });

  it('places a compaction divider right after the message it follows, or before the next shown one', () => {
    const ms = [1, 2, 5, 6].map((seq) => message({ id: `m${seq}`, seq, created_at: at(2025, 1, 1, 9, seq) }));
    // seq 4 was a tool result that is not shown on its own.
    const rows = buildRows(ms, [compaction(2, 'first'), compaction(4, 'second')], { head: false, live: true, error: true });
    const order = rows.map((r) => (r.kind === 'message' ? r.message.id : r.kind === 'compaction' ? `c${r.compaction.seq}` : r.kind));
    expect(order).toEqual(['date', 'm1', 'm2', 'c2', 'c4', 'm5', 'm6', 'live', 'error']);
  });

  it('ends with a divider that follows the last message shown', () => {
    const ms = [message({ id: 'x', seq: 10, created_at: at(2025, 1, 1) })];
    const rows = buildRows(ms, [compaction(12)], { head: false, live: false, error: false });
    expect(rows.at(-1)!.kind).toBe('compaction');
  });
});

describe('paging windows', () => {
  it('drops the far end only, keeping a contiguous run', () => {
    const ms = Array.from({ length: 10 }, (_, i) => message({ id: `m${i}`, seq: i }));
    const [up, droppedUp] = trimWindow(ms, 6, 'end');
    expect(up.map((m) => m.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(droppedUp).toBe(true);
    const [down] = trimWindow(ms, 6, 'start');
    expect(down.map((m) => m.seq)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(trimWindow(ms, 20, 'start')).toEqual([ms, false]);
  });

  it('merges compaction markers from neighbouring pages once', () => {
    const merged = mergeCompactions([compaction(5), compaction(9)], [compaction(9), compaction(2)]);
    expect(merged.map((c) => c.seq)).toEqual([2, 5, 9]);
  });
});
