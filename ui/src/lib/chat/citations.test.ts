import { describe, expect, it } from 'vitest';
import type { AgentFile } from '../backend/types';
import { splitCitations, type Citation } from './citations';

const file = (file_name: string, file_id = file_name): AgentFile => ({
  file_id,
  file_name,
  folder_id: 'source-1',
  is_open: false,
  offset: 1,
  length: 100,
  last_accessed_at: null,
});

const manual = file('manuals/libtasn1.pdf');
const notes = file('manuals/notes.md');
const other = file('archive/notes.md');

describe('splitCitations', () => {
  it('finds line, range and page citations of the files the agent reads', () => {
    const parts = splitCitations('See manuals/libtasn1.pdf:p11 (L337) and manuals/notes.md:L12-20.', [manual, notes]);
    expect(parts).toHaveLength(5);
    const [, pdf, , md, end] = parts as [string, Citation, string, Citation, string];
    expect(pdf).toMatchObject({ text: 'manuals/libtasn1.pdf:p11 (L337)', file: manual, page: 11, line: 337, end: 337 });
    expect(md).toMatchObject({ text: 'manuals/notes.md:L12-20', file: notes, page: null, line: 12, end: 20 });
    expect(end).toBe('.');
  });

  it('leaves alone what only looks like a citation, and names shared by two folders', () => {
    const files = [manual, notes, other];
    expect(splitCitations('at 10:30 on localhost:8080, see notes.md:L3', files)).toEqual(['at 10:30 on localhost:8080, see notes.md:L3']);
    expect(splitCitations('libtasn1.pdf:p2', files)[0]).toMatchObject({ file: manual, page: 2, line: 1 });
    expect(splitCitations('manuals/missing.md:L4', files)).toEqual(['manuals/missing.md:L4']);
    expect(splitCitations('anything', [])).toEqual(['anything']);
  });
});
