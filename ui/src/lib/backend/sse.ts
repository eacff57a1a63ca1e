import { createParser } from 'eventsource-parser';

/**
 * Reads a `text/event-stream` body and hands each event's `data` to `onData`, until the body
 * ends, `onData` returns `false`, or `signal` aborts. Resolves `true` if `onData` stopped it.
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onData: (data: string) => boolean | void,
  signal?: AbortSignal,
): Promise<boolean> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let stop = false;
  const parser = createParser({
    onEvent(event) {
      if (stop) return;
      if (onData(event.data) === false) stop = true;
    },
  });
  const abort = () => void reader.cancel().catch(() => {});
  signal?.addEventListener('abort', abort, { once: true });
  try {
    while (!stop && !signal?.aborted) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    signal?.removeEventListener('abort', abort);
    if (stop) void reader.cancel().catch(() => {});
  }
  return stop;
}
