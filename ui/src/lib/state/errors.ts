import { BackendError } from '../backend';

/** What a person can do about an error, and whether provider settings are the place to do it. */
export interface Advice {
  title: string;
  detail: string;
  /** Show a link to Settings → Providers. */
  providers: boolean;
}

/** Turns an engine error into words for people: what happened and what to do next. */
export function adviceFor(err: { code: string; message: string }): Advice {
  const detail = err.message;
  switch (err.code) {
    case 'provider_not_configured':
      return { title: 'No model provider is set up for this agent’s model.', detail, providers: true };
    case 'provider_auth':
      return { title: 'The provider refused the API key. Check or replace it.', detail, providers: true };
    case 'provider_unreachable':
      if (detail.includes('dropped in the middle of the answer')) {
        return {
          title: 'The connection to the model server dropped in the middle of the reply. The part that arrived is kept; Retry when the server is back.',
          detail,
          providers: false,
        };
      }
      return {
        title: 'The model server did not answer. Is it running, and is its address right?',
        detail,
        providers: true,
      };
    case 'provider_timeout':
      return {
        title: 'The model took too long to answer. Local models can be slow: try again, or raise the timeout.',
        detail,
        providers: true,
      };
    case 'rate_limited':
      return { title: 'The provider is limiting requests right now. Wait a little and send again.', detail, providers: false };
    case 'context_length_exceeded':
      return {
        title: 'The conversation no longer fits the model’s context window. Raise the window in the agent’s model settings or trim memory.',
        detail,
        providers: false,
      };
    case 'provider_bad_request':
    case 'provider_bad_response':
    case 'provider_error':
      return { title: 'The model provider reported a problem.', detail, providers: true };
    case 'secrets':
      return { title: 'The system keychain could not be read.', detail, providers: false };
    case 'backend_unreachable':
      return { title: 'Engram itself is not answering.', detail, providers: false };
    default:
      return { title: 'Something went wrong.', detail, providers: false };
  }
}

/** The message of anything thrown, for a one-line status. */
export function messageOf(e: unknown): string {
  return BackendError.from(e).message;
}
