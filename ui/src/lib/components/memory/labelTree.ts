import type { Block } from '../../backend/types';

/** A block, or a folder of blocks sharing a path prefix (`system/` of `system/human/family`). */
export type TreeNode =
  | { kind: 'block'; block: Block }
  | { kind: 'folder'; name: string; path: string; children: TreeNode[] };

/**
 * Core-memory blocks as a tree of their path-like labels, in the order the blocks come (the
 * context window's order). Labels are split at `/`; empty segments (a leading `/`, a doubled
 * `//`) are skipped, as Letta's memory tree does. Labels themselves are never rewritten: a leaf
 * always carries its block, whose `label` is the whole path.
 */
export function labelTree(blocks: Block[]): TreeNode[] {
  const root: TreeNode[] = [];
  for (const block of blocks) {
    const parts = block.label.split('/').filter((p) => p !== '');
    let level = root;
    let path = '';
    for (const part of parts.slice(0, -1)) {
      path = path ? `${path}/${part}` : part;
      let folder = level.find((n) => n.kind === 'folder' && n.name === part);
      if (!folder) {
        folder = { kind: 'folder', name: part, path, children: [] };
        level.push(folder);
      }
      level = (folder as Extract<TreeNode, { kind: 'folder' }>).children;
    }
    level.push({ kind: 'block', block });
  }
  return root;
}

/** How many blocks a node holds. */
export function blockCount(node: TreeNode): number {
  return node.kind === 'block' ? 1 : node.children.reduce((n, c) => n + blockCount(c), 0);
}
