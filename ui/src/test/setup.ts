import '@testing-library/jest-dom/vitest';

// jsdom lays nothing out and has no ResizeObserver or Element.scrollTo; the virtualised message
// list needs both. The stand-in reports a tall viewport for the list (so a test's rows are all
// rendered at their estimated size) and nothing for other elements.
if (typeof globalThis.ResizeObserver === 'undefined') {
  globalThis.ResizeObserver = class {
    #cb: ResizeObserverCallback;
    constructor(cb: ResizeObserverCallback) {
      this.#cb = cb;
    }
    observe(target: Element) {
      if (!target.classList.contains('vlist')) return;
      const entry = { target, contentRect: { width: 800, height: 4000 } } as unknown as ResizeObserverEntry;
      queueMicrotask(() => this.#cb([entry], this as unknown as ResizeObserver));
    }
    unobserve() {}
    disconnect() {}
  } as unknown as typeof ResizeObserver;
}
if (typeof Element.prototype.scrollTo !== 'function') {
  Element.prototype.scrollTo = function (this: Element, opts?: ScrollToOptions | number) {
    if (typeof opts === 'object' && typeof opts.top === 'number') this.scrollTop = opts.top;
  } as Element['scrollTo'];
}
