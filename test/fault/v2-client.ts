// The three register operations over the real v2 HTTP API, each classified into what the
// history may claim about it (register-model.ts):
//   definite  → the server answered and we know the effect (value / ok / compare-failed /
//               not-found);
//   unknown   → timeout, connection lost after sending, 5xx or any other answer: a write
//               may or may not have been applied;
//   refused   → the connection was refused, so the request never reached a server and
//               certainly had no effect (the operation is left out of the history).

import { request, Agent } from "node:http";
import type { RegisterInput, RegisterOutput } from "../linearizability/register-model.ts";

export const Outcome = { definite: "definite", unknown: "unknown", refused: "refused" } as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

export interface OpResult {
  outcome: Outcome;
  output: RegisterOutput;
  /** Short reason for unknown/refused (status, error code), for the summary. */
  detail?: string;
}

export interface HttpAnswer {
  status: number;
  body: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** Closes pooled connections of both clients (call once at the end of a run). */
export function closeClientConnections(): void {
  agent.destroy();
}

/**
 * One HTTP exchange on the shared keep-alive pool, bounded by `timeoutMs` as a whole.
 * Rejects with the socket error (`code` ECONNREFUSED, ECONNRESET, ...) or code TIMEOUT.
 */
export function send(opts: { url: string; method: string; body?: string; contentType?: string; timeoutMs: number }): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const u = new URL(opts.url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method,
        agent,
        headers: opts.body === undefined ? {} : { "content-type": opts.contentType ?? "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(opts.body) },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    // One deadline for the whole exchange (connect, send, wait, read).
    const timer = setTimeout(() => req.destroy(Object.assign(new Error("client timeout"), { code: "TIMEOUT" })), opts.timeoutMs);
    req.on("close", () => clearTimeout(timer));
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(opts.body);
  });
}

function errorCode(body: string): number | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const code = typeof parsed === "object" && parsed !== null ? (parsed as { errorCode?: unknown }).errorCode : undefined;
    return typeof code === "number" ? code : undefined;
  } catch {
    return undefined;
  }
}

function nodeValue(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { node?: { value?: unknown } };
    return typeof parsed.node?.value === "string" ? parsed.node.value : undefined;
  } catch {
    return undefined;
  }
}

const unknown = (detail: string): OpResult => ({ outcome: Outcome.unknown, output: { type: "unknown" }, detail });
const definite = (output: RegisterOutput): OpResult => ({ outcome: Outcome.definite, output });

/** Runs one operation against the member at `baseUrl`; never throws. */
export async function runOp(baseUrl: string, input: RegisterInput, timeoutMs: number): Promise<OpResult> {
  const keyUrl = `${baseUrl}/v2/keys/${input.key.split("/").map(encodeURIComponent).join("/")}`;
  let answer: HttpAnswer;
  try {
    if (input.op === "get") {
      answer = await send({ url: `${keyUrl}?quorum=true`, method: "GET", timeoutMs });
    } else {
      const query = input.op === "cas" ? `?prevValue=${encodeURIComponent(input.prevValue)}` : "";
      answer = await send({ url: keyUrl + query, method: "PUT", body: `value=${encodeURIComponent(input.value)}`, timeoutMs });
    }
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === "ECONNREFUSED") return { outcome: Outcome.refused, output: { type: "unknown" }, detail: "ECONNREFUSED" };
    return unknown(typeof code === "string" ? code : String(err));
  }
  const { status, body } = answer;
  switch (input.op) {
    case "get": {
      if (status === 200) {
        const v = nodeValue(body);
        return v === undefined ? unknown(`200 without a value`) : definite({ type: "value", value: v });
      }
      if (status === 404 && errorCode(body) === 100) return definite({ type: "value", value: null });
      return unknown(`HTTP ${status}`);
    }
    case "set":
      return status === 200 || status === 201 ? definite({ type: "ok" }) : unknown(`HTTP ${status}`);
    case "cas":
      if (status === 200 || status === 201) return definite({ type: "ok" });
      if (status === 412 && errorCode(body) === 101) return definite({ type: "compare-failed" });
      if (status === 404 && errorCode(body) === 100) return definite({ type: "not-found" });
      return unknown(`HTTP ${status}`);
  }
}
