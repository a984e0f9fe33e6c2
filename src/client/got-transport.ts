// The Transport contract implemented with got (see transport.ts for why the CLI itself
// uses node:http). got's own retries and redirects are off: endpoint fail-over belongs
// to the cluster client, which must know exactly which endpoints were tried.

import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { DeadlineExceededError, HeaderTimeoutError, NetworkError } from "./errors.ts";
import {
  abortReason,
  flattenHeaders,
  readTlsFiles,
  toNetworkError,
  type HttpResponse,
  type TlsFiles,
  type Transport,
} from "./transport.ts";

export async function createGotTransport(tls: TlsFiles = {}): Promise<Transport> {
  const { got } = await import("got");
  const files = readTlsFiles(tls);
  const agent = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const client = got.extend({
    retry: { limit: 0 },
    followRedirect: false,
    throwHttpErrors: false,
    decompress: false,
    agent,
    https: {
      ...(files.ca ? { certificateAuthority: files.ca } : {}),
      ...(files.cert ? { certificate: files.cert } : {}),
      ...(files.key ? { key: files.key } : {}),
    },
  });

  return {
    async request(req): Promise<HttpResponse> {
      if (req.signal?.aborted) throw abortReason(req.signal);
      // One controller for both reasons to stop: the caller's signal and our header timer.
      const controller = new AbortController();
      let timedOut = false;
      const onAbort = (): void => controller.abort(abortReason(req.signal));
      req.signal?.addEventListener("abort", onAbort, { once: true });
      const timer =
        (req.headerTimeoutMs ?? 0) > 0
          ? setTimeout(() => {
              timedOut = true;
              controller.abort();
            }, req.headerTimeoutMs)
          : undefined;
      try {
        const pending = client(`${req.origin}${req.path}`, {
          method: req.method,
          headers: { ...req.headers },
          signal: controller.signal,
          ...(req.body !== undefined ? { body: req.body } : {}),
        });
        pending.on("response", () => clearTimeout(timer));
        const res = await pending;
        return {
          status: res.statusCode,
          statusText: res.statusMessage ?? "",
          headers: flattenHeaders(res.headers),
          body: res.body,
        };
      } catch (err) {
        if (timedOut) throw new HeaderTimeoutError(req.origin);
        if (req.signal?.aborted) throw abortReason(req.signal);
        if (err instanceof DeadlineExceededError || err instanceof NetworkError) throw err;
        const e = err as NodeJS.ErrnoException;
        throw toNetworkError(e, new URL(req.origin));
      } finally {
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", onAbort);
      }
    },
    close() {
      agent.http.destroy();
      agent.https.destroy();
    },
  };
}
