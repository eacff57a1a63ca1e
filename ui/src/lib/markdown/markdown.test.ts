import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render } from '@testing-library/svelte';
import Markdown from './Markdown.svelte';
import { setBackend, type Backend } from '../backend';

declare global {
  interface Window {
    pwned?: boolean;
  }
}

afterEach(() => {
  setBackend(null);
  delete window.pwned;
});

describe('Markdown', () => {
  it('renders an onerror payload inert', async () => {
    const { container } = render(Markdown, { source: 'hi <img src=x onerror="window.pwned=true"> there' });
    await new Promise((r) => setTimeout(r, 20));
    expect(window.pwned).toBeUndefined();
    for (const el of container.querySelectorAll('*')) {
      for (const attr of el.getAttributeNames()) expect(attr.startsWith('on')).toBe(false);
    }
    // A relative source is dropped too: nothing is fetched from the app's own origin.
    expect(container.querySelector('img')?.getAttribute('src') ?? null).toBeNull();
    expect(container.textContent).toContain('hi');
  });

  it('drops script tags and javascript: links', () => {
    const { container } = render(Markdown, {
      source:
        '<script>window.pwned = true</script>\n\n[click](javascript:alert(1)) and <a href="javascript:alert(2)">raw</a>',
    });
    expect(container.querySelector('script')).toBeNull();
    expect(window.pwned).toBeUndefined();
    for (const a of container.querySelectorAll('a')) {
      expect(a.getAttribute('href') ?? '').not.toMatch(/javascript/i);
    }
    expect(container.textContent).toContain('click');
  });

  it('opens safe links outside the app with noopener', async () => {
    const openUrl = vi.fn(async () => {});
    setBackend({ openUrl } as unknown as Backend);
    const { container } = render(Markdown, { source: 'see [the docs](https://example.com/docs)' });
    const a = container.querySelector('a')!;
    expect(a.getAttribute('target')).toBe('_blank');
    expect(a.getAttribute('rel')).toBe('noopener noreferrer');
    await fireEvent.click(a);
    expect(openUrl).toHaveBeenCalledWith('https://example.com/docs');
  });

  it('renders markdown structure and highlights code', () => {
    const { container } = render(Markdown, {
      source: '# Title\n\n**bold** and `a < b`\n\n- one\n- two\n\n```python\ndef f(x):\n    return x\n```',
    });
    expect(container.querySelector('h1')?.textContent).toBe('Title');
    expect(container.querySelector('strong')?.textContent).toBe('bold');
    expect(container.querySelector('p code')?.textContent).toBe('a < b');
    expect(container.querySelectorAll('li')).toHaveLength(2);
    const code = container.querySelector('pre code')!;
    expect(code.textContent).toContain('def f(x):');
    expect(code.querySelector('.hljs-keyword')?.textContent).toBe('def');
  });

  it('shows text with angle brackets and ampersands as written', () => {
    const { container } = render(Markdown, { source: `Tom & Jerry: 1 < 2 > 0 "quoted", it's` });
    expect(container.textContent?.trim()).toBe(`Tom & Jerry: 1 < 2 > 0 "quoted", it's`);
  });
});
