import type { AgentFile } from '../backend/types';

/** A place in one of the agent's files, as the file tools cite it: `folder/file:L40`,
 *  `folder/file:L40-52` or `folder/file.pdf:p12 (L337)`. Lines are 1-based and inclusive. */
export interface Citation {
  /** The text as written in the reply. */
  text: string;
  file: AgentFile;
  /** The page of a paged document, when cited. */
  page: number | null;
  /** First line cited (the page's line when only a page is given). */
  line: number;
  /** Last line cited (= `line` for one line). */
  end: number;
}

/** A piece of text: plain, or a citation of a file the agent reads. */
export type Segment = string | Citation;

const CITE = /([^\s`'"()[\]<>]+?):(?:p(\d+)(?: \(L(\d+)(?:-(\d+))?\))?|L(\d+)(?:-(\d+))?)(?![\w-])/g;

/** The file named `name` in a citation: by its full name (`folder/file`), or by the name inside
 *  its folder when only one file has it. */
function fileNamed(name: string, files: AgentFile[]): AgentFile | null {
  const exact = files.find((f) => f.file_name === name);
  if (exact) return exact;
  const inside = files.filter((f) => f.file_name.endsWith(`/${name}`));
  return inside.length === 1 ? inside[0]! : null;
}

/**
 * Splits `text` into plain pieces and citations of `files`. Only names of files the agent
 * reads become citations; anything else that looks like one (a URL's `host:port`, a time)
 * stays text.
 */
export function splitCitations(text: string, files: AgentFile[]): Segment[] {
  if (files.length === 0 || !text.includes(':')) return [text];
  const out: Segment[] = [];
  let at = 0;
  for (const m of text.matchAll(CITE)) {
    const file = fileNamed(m[1]!, files);
    if (!file) continue;
    const page = m[2] ? Number(m[2]) : null;
    const line = Number(m[3] ?? m[5] ?? 1);
    const end = Number(m[4] ?? m[6] ?? line);
    if (m.index > at) out.push(text.slice(at, m.index));
    out.push({ text: m[0], file, page, line, end: Math.max(end, line) });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out.length ? out : [text];
}
