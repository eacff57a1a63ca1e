import { describe, expect, it } from 'vitest';
import {
  NO_FILTERS,
  clampPage,
  countLabel,
  dayEnd,
  dayStart,
  listRequest,
  pageCount,
  pageOf,
  parseTags,
  rangeError,
  rangeLabel,
  relevance,
} from './archive';

describe('archive logic', () => {
  it('counts pages and keeps a page within them', () => {
    expect(pageCount(100_000, 10)).toBe(10_000);
    expect(pageCount(101, 25)).toBe(5);
    expect(pageCount(0, 10)).toBe(1);
    expect(clampPage(20_000, 100_000, 10)).toBe(9_999);
    expect(clampPage(-3, 50, 10)).toBe(0);
    expect(clampPage(Number.NaN, 50, 10)).toBe(0);
    expect(pageOf(9_990, 10)).toBe(999);
    expect(pageOf(30, 25)).toBe(1);
  });

  it('labels the range and the count, with a search counted by its own hits', () => {
    expect(rangeLabel(99_990, 10, 100_000)).toBe('99,991–100,000 of 100,000');
    expect(rangeLabel(0, 0, 0)).toBe('0 of 0');
    expect(countLabel({ total: 100_000, filtered: false })).toBe('100,000 passages');
    expect(countLabel({ total: 1, filtered: false })).toBe('1 passage');
    expect(countLabel({ total: 37, filtered: true })).toBe('37 passages match the filters');
    expect(countLabel({ total: 12, filtered: false, query: 'tulips', limit: 50 })).toBe('12 matches for “tulips”');
    expect(countLabel({ total: 1, filtered: true, query: 'tea', limit: 50 })).toBe('1 match for “tea” (filtered)');
    expect(countLabel({ total: 50, filtered: false, query: 'the', limit: 50 })).toBe('best 50 matches for “the”');
    expect(countLabel({ total: 3, filtered: false, query: 'tulips', limit: 50, context: 2 })).toBe(
      '1 match for “tulips”, and 2 beside them',
    );
  });

  it('reads tags as a person types them', () => {
    expect(parseTags(' garden, plans,,garden , ')).toEqual(['garden', 'plans']);
    expect(parseTags('')).toEqual([]);
  });

  it('turns local days into the instants that bound them', () => {
    const start = new Date(dayStart('2026-03-05')!);
    const end = new Date(dayEnd('2026-03-05')!);
    expect([start.getFullYear(), start.getMonth(), start.getDate(), start.getHours()]).toEqual([2026, 2, 5, 0]);
    expect([end.getDate(), end.getHours(), end.getMinutes(), end.getMilliseconds()]).toEqual([5, 23, 59, 999]);
    expect(dayStart('5 March')).toBeUndefined();
    expect(dayEnd('')).toBeUndefined();
    expect(rangeError({ ...NO_FILTERS, from: '2026-03-06', to: '2026-03-05' })).toMatch(/after/);
    expect(rangeError({ ...NO_FILTERS, from: '2026-03-05', to: '2026-03-05' })).toBeNull();
  });

  it('builds the engine’s list request: filters, page, order, and a jump to a day', () => {
    const f = { ...NO_FILTERS, tags: 'garden, plans', tagMatch: 'all' as const, from: '2026-01-01', to: '' };
    const list = listRequest(f, 3, 25);
    expect(list).toEqual({
      tags: ['garden', 'plans'],
      tag_match: 'all',
      offset: 75,
      limit: 25,
      ascending: false,
      start: dayStart('2026-01-01'),
    });
    // Newest first, the jump aims at the day's end; oldest first, at its start.
    expect(listRequest(NO_FILTERS, 0, 10, '2026-02-02').at).toBe(dayEnd('2026-02-02'));
    expect(listRequest({ ...NO_FILTERS, ascending: true }, 0, 10, '2026-02-02').at).toBe(dayStart('2026-02-02'));
    expect(listRequest(NO_FILTERS, 0, 10).at).toBeUndefined();
  });

  it('shows relevance without assuming the score’s scale', () => {
    // BM25-sized scores and RRF-sized scores read the same when their ratios are the same.
    const bm25 = relevance([8, 4, 2]);
    const rrf = relevance([0.032, 0.016, 0.008]);
    expect(bm25.map((r) => r.fraction)).toEqual([1, 0.5, 0.25]);
    expect(rrf.map((r) => r.fraction)).toEqual([1, 0.5, 0.25]);
    expect(bm25[0]!.label).toBe('best match');
    expect(bm25[1]!.label).toBe('50% of the best match');
    // Scores that are not all positive fall back to rank order.
    const ranked = relevance([0, 0, 0]).map((r) => r.fraction);
    [1, 2 / 3, 1 / 3].forEach((want, i) => expect(ranked[i]).toBeCloseTo(want));
    expect(relevance([-1, -2]).map((r) => r.fraction)).toEqual([1, 0.5]);
    expect(relevance([])).toEqual([]);
  });

  it('marks passages brought along as context, and names the best match among the matches', () => {
    const r = relevance([3, 2, 1], [true, false, false]);
    expect(r.map((x) => x.context)).toEqual([true, false, false]);
    expect(r[0]!.label).toContain('context');
    expect(r[1]!.label).toBe('best match');
    expect(r[2]!.label).toBe('33% of the best match');
  });
});
