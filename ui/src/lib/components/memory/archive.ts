// The archive browser's logic, kept apart from its components so it can be tested alone:
// page arithmetic, filters as the engine's `PassageList`, dates as local days, and how a
// search hit's score is shown.

import type { PassageList, TagMatch } from '../../backend/types';

/** Page sizes offered. */
export const PAGE_SIZES = [10, 25, 50, 100] as const;

/** What the person chose to see: filters and order (the page is kept apart). */
export interface ArchiveFilters {
  /** Tags, as typed (comma-separated). */
  tags: string;
  tagMatch: TagMatch;
  /** First day to include, `YYYY-MM-DD` (local), or empty. */
  from: string;
  /** Last day to include, `YYYY-MM-DD` (local), or empty. */
  to: string;
  /** Oldest first when true. */
  ascending: boolean;
}

export const NO_FILTERS: ArchiveFilters = { tags: '', tagMatch: 'any', from: '', to: '', ascending: false };

/** Tags from a comma-separated text: trimmed, blanks and repeats dropped, order kept. */
export function parseTags(text: string): string[] {
  const out: string[] = [];
  for (const t of text.split(',')) {
    const tag = t.trim();
    if (tag && !out.includes(tag)) out.push(tag);
  }
  return out;
}

/** Whether any filter narrows the list (the order does not). */
export function isFiltered(f: ArchiveFilters): boolean {
  return parseTags(f.tags).length > 0 || f.from !== '' || f.to !== '';
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The first instant of a local day `YYYY-MM-DD` (ISO, UTC), or undefined for anything else. */
export function dayStart(day: string): string | undefined {
  const m = DAY.exec(day);
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** The last instant (millisecond) of a local day `YYYY-MM-DD` (ISO, UTC), or undefined. */
export function dayEnd(day: string): string | undefined {
  const m = DAY.exec(day);
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + 1);
  return Number.isNaN(d.getTime()) ? undefined : new Date(d.getTime() - 1).toISOString();
}

/** A date-range problem a person can fix, or null. */
export function rangeError(f: ArchiveFilters): string | null {
  if (f.from && f.to && f.from > f.to) return '“From” is after “To”.';
  return null;
}

/**
 * The engine's list request for page `page` (0-based) of `size` passages under `f`; with
 * `jumpTo` (a local day), the page holding that day instead (the engine answers its offset).
 */
export function listRequest(f: ArchiveFilters, page: number, size: number, jumpTo?: string): PassageList {
  const list: PassageList = {
    tags: parseTags(f.tags),
    tag_match: f.tagMatch,
    offset: Math.max(0, page) * size,
    limit: size,
    ascending: f.ascending,
  };
  const start = dayStart(f.from);
  const end = dayEnd(f.to);
  if (start) list.start = start;
  if (end) list.end = end;
  if (jumpTo) {
    // Newest first, the page holds the newest passage of that day or before; oldest first,
    // the oldest of that day or after.
    const at = f.ascending ? dayStart(jumpTo) : dayEnd(jumpTo);
    if (at) list.at = at;
  }
  return list;
}

/** Pages needed for `total` passages (at least one, so an empty archive has page 1 of 1). */
export function pageCount(total: number, size: number): number {
  return Math.max(1, Math.ceil(total / size));
}

/** The page (0-based) that starts at `offset`. */
export function pageOf(offset: number, size: number): number {
  return Math.floor(offset / size);
}

/** `page` kept within the pages of `total` passages. */
export function clampPage(page: number, total: number, size: number): number {
  if (!Number.isFinite(page)) return 0;
  return Math.min(Math.max(0, Math.trunc(page)), pageCount(total, size) - 1);
}

/** "11–20 of 100,000" for a page, or "0 of 0" when nothing passes. */
export function rangeLabel(offset: number, shown: number, total: number): string {
  const n = (x: number) => x.toLocaleString('en-US');
  if (total === 0 || shown === 0) return `0 of ${n(total)}`;
  return `${n(offset + 1)}–${n(offset + shown)} of ${n(total)}`;
}

/** The count line: passages in the (filtered) archive, or a search's matches. */
export function countLabel(opts: { total: number; filtered: boolean; query?: string; limit?: number; context?: number }): string {
  const { total, filtered, query } = opts;
  const n = total.toLocaleString('en-US');
  if (query) {
    // Passages brought along beside a match are counted apart from the matches.
    const beside = opts.context ?? 0;
    const matches = total - beside;
    const capped = opts.limit !== undefined && total >= opts.limit ? 'best ' : '';
    const extra = beside > 0 ? `, and ${beside} beside them` : '';
    return `${capped}${matches.toLocaleString('en-US')} match${matches === 1 ? '' : 'es'} for “${query}”${extra}${filtered ? ' (filtered)' : ''}`;
  }
  return `${n} passage${total === 1 ? '' : 's'}${filtered ? ' match the filters' : ''}`;
}

/** How a search hit's relevance is shown: a bar's fill (0–1) and words for it. */
export interface Relevance {
  fraction: number;
  label: string;
  /** Brought along beside a match (it shares no word with the query), not a match itself. */
  context: boolean;
}

/**
 * The relevance of each hit among one search's hits (best first), without assuming the
 * score's scale: while every score is positive (BM25, fused ranks and cosine similarity all
 * are), a hit's share of the best score; otherwise its rank. The best hit reads "best match".
 */
export function relevance(scores: number[], context: boolean[] = []): Relevance[] {
  if (scores.length === 0) return [];
  const best = Math.max(...scores);
  const positive = scores.every((s) => Number.isFinite(s) && s > 0);
  const firstMatch = scores.findIndex((_, i) => !context[i]);
  return scores.map((s, i) => {
    const fraction = positive ? s / best : 1 - i / scores.length;
    const clamped = Math.min(1, Math.max(0, fraction));
    if (context[i]) return { fraction: clamped, label: 'context: next to a match, without your words', context: true };
    const label = i === firstMatch || clamped >= 0.995 ? 'best match' : `${Math.round(clamped * 100)}% of the best match`;
    return { fraction: clamped, label, context: false };
  });
}

/** A passage time as a person reads it, with the date. */
export function when(iso: string): string {
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}
