import { API_BASE, ApiError, readEnvelope } from './api-client.js';

export interface UploadProgressOptions {
  signal?: AbortSignal;
  /** Request-body bytes sent so far and in all (the multipart body, fields included). */
  onProgress?(loaded: number, total: number): void;
  /** The body left the browser; the host is now storing and checking it. */
  onSent?(): void;
}

/**
 * POSTs a multipart form to `/api/v1/{path}` and resolves to the envelope's `result`, like `call`. It uses
 * XMLHttpRequest because fetch reports no upload progress. Aborting rejects with a DOMException `AbortError`.
 */
export function postForm<R extends object = Record<string, unknown>>(
  path: string,
  form: FormData,
  options: UploadProgressOptions = {},
): Promise<R> {
  const { signal, onProgress, onSent } = options;
  return new Promise<R>((resolve, reject) => {
    if (signal?.aborted) {
      reject(new DOMException('The upload was aborted.', 'AbortError'));
      return;
    }
    const xhr = new XMLHttpRequest();
    const onAbort = (): void => xhr.abort();
    const settle = (): void => signal?.removeEventListener('abort', onAbort);

    xhr.open('POST', API_BASE + path);
    xhr.responseType = 'text';
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress?.(event.loaded, event.total);
    });
    xhr.upload.addEventListener('load', () => onSent?.());
    xhr.addEventListener('load', () => {
      settle();
      let body: unknown;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        reject(
          new ApiError(
            'BAD_RESPONSE',
            `The host answered something that is not the API (HTTP ${xhr.status}).`,
          ),
        );
        return;
      }
      try {
        resolve(readEnvelope<R>(body));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    xhr.addEventListener('error', () => {
      settle();
      reject(
        new ApiError(
          'NETWORK_ERROR',
          'The connection to the host broke off. Check that it is running and reachable.',
        ),
      );
    });
    xhr.addEventListener('abort', () => {
      settle();
      reject(new DOMException('The upload was aborted.', 'AbortError'));
    });
    signal?.addEventListener('abort', onAbort);
    xhr.send(form);
  });
}

export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}
