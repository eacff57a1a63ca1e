/** Runs `fn` once before the next repaint (or soon, where there are no repaints). */
export function onNextFrame(fn: () => void): void {
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(() => fn());
  else setTimeout(fn, 16);
}
