// v3 make-mirror <destination> (make_mirror_command.go over clientv3/mirror's syncer):
// copies the source's keys (--prefix, or every key) at one revision to the destination,
// then follows the source's watch from the next revision, applying each revision's
// events as one txn, until interrupted. Every 30 s the number of keys written so far is
// printed on stdout, as etcdctl's ticker does. Keys are renamed by replacing the first
// occurrence of --prefix with --dest-prefix (Go's strings.Replace(key, prefix, dest, 1):
// an empty --prefix puts --dest-prefix in front of every key). Values are copied, not
// leases (etcdctl's Put carries none either).
//
// The destination gets a client of its own from the --dest-* TLS flags and no auth, as
// etcdctl builds it. A compaction that overtakes the watch ends the command (exit 1,
// "etcdserver: mvcc: required revision has been compacted"); a source that goes away is
// watched again from the next revision not yet applied (clientv3 retries its watch).

import { V3Error } from "../../../api/v3-errors.ts";
import { NetworkError, ClusterError } from "../../../client/errors.ts";
import { createNodeTransport, type TlsFiles } from "../../../client/transport.ts";
import { V3Client } from "../../../client/v3-gateway.ts";
import { b64, unb64, type WireRangeResponse, type WireWatchResponse } from "../../../client/v3-types.ts";
import { CliExit } from "../../exit-codes.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { v3ErrorText, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { prefixRangeEnd } from "./printers-admin.ts";

/** clientv3/mirror's batchLimit: keys per range request of the initial copy. */
const batchLimit = 1000;
/** etcdctl prints the running total at this period. */
const reportEveryMs = 30_000;

const str = (inv: V3Invocation, name: string): string => {
  const v = inv.flags[name];
  return typeof v === "string" ? v : "";
};

/** Go's strings.Replace(key, from, to, 1) on bytes. */
export function replaceFirst(key: Buffer, from: Buffer, to: Buffer): Buffer {
  if (from.length === 0) return Buffer.concat([to, key]);
  const at = key.indexOf(from);
  return at === -1 ? key : Buffer.concat([key.subarray(0, at), to, key.subarray(at + from.length)]);
}

const isEventDelete = (t: unknown): boolean => t === "DELETE" || t === 1;
const wireBig = (v: unknown): bigint => (v === undefined || v === "" || v === null ? 0n : BigInt(v as string | number));

function destClient(inv: V3Invocation, dest: string): Promise<V3Client> {
  const tls: TlsFiles = { insecureTransport: inv.flags["dest-insecure-transport"] !== false };
  if (str(inv, "dest-cacert") !== "") tls.caFile = str(inv, "dest-cacert");
  if (str(inv, "dest-cert") !== "") tls.certFile = str(inv, "dest-cert");
  if (str(inv, "dest-key") !== "") tls.keyFile = str(inv, "dest-key");
  return createNodeTransport(tls).then((transport) => {
    try {
      return new V3Client({ endpoints: [dest], transport, dialTimeoutMs: inv.globals.dialTimeoutMs, tls });
    } catch (err) {
      transport.close();
      throw v3Fail(V3Exit.BadArgs, v3ErrorText(err));
    }
  });
}

const waitMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

async function mirror(ctx: V3Context, dc: V3Client, io: Io): Promise<never> {
  const inv = ctx.inv;
  const prefix = Buffer.from(str(inv, "prefix"), "utf8");
  let total = 0;
  const ticker = setInterval(() => io.stdout(`${total}\n`), reportEveryMs);
  const fail = (err: unknown): never => {
    if (err instanceof CliExit) throw err;
    throw v3Fail(V3Exit.Error, v3ErrorText(err));
  };
  try {
    // The syncer's revision: the header of a read of "foo", as clientv3/mirror takes it.
    let rev: bigint;
    try {
      const r = await ctx.client.call<WireRangeResponse>("/v3/kv/range", { key: b64("foo") });
      rev = wireBig(r.header?.revision);
    } catch (err) {
      return fail(err);
    }
    const noDest = inv.flags["no-dest-prefix"] === true;
    let destPrefixText = str(inv, "dest-prefix");
    if (noDest && destPrefixText !== "") {
      throw v3Fail(V3Exit.BadArgs, "`--dest-prefix` and `--no-dest-prefix` cannot be set at the same time, choose one");
    }
    if (!noDest && destPrefixText === "") destPrefixText = str(inv, "prefix");
    const destPrefix = Buffer.from(destPrefixText, "utf8");
    const rename = (k: Buffer): string => replaceFirst(k, prefix, destPrefix).toString("base64");

    // Initial copy, a page at a time at one revision.
    let key = prefix.length === 0 ? Buffer.from([0]) : prefix;
    const end = prefix.length === 0 ? Buffer.from([0]) : prefixRangeEnd(prefix);
    for (;;) {
      let page: WireRangeResponse;
      try {
        page = await ctx.client.call<WireRangeResponse>("/v3/kv/range", {
          key: key.toString("base64"),
          range_end: end.toString("base64"),
          limit: batchLimit,
          revision: rev.toString(),
        });
      } catch (err) {
        return fail(err);
      }
      const kvs = page.kvs ?? [];
      for (const kv of kvs) {
        try {
          await dc.call("/v3/kv/put", { key: rename(unb64(kv.key)), value: kv.value ?? "" });
        } catch (err) {
          return fail(err);
        }
        total++;
      }
      const last = kvs[kvs.length - 1];
      if (page.more !== true || last === undefined) break;
      key = Buffer.concat([unb64(last.key), Buffer.from([0])]);
    }

    // Then the updates: one txn per source revision, in order.
    let next = rev + 1n;
    let queue: Promise<void> = Promise.resolve();
    let failure: unknown;
    const apply = async (r: WireWatchResponse): Promise<void> => {
      let ops: unknown[] = [];
      let lastRev = 0n;
      const flush = async (): Promise<void> => {
        if (ops.length === 0) return;
        await dc.call("/v3/kv/txn", { success: ops });
        ops = [];
      };
      for (const ev of r.events ?? []) {
        const modRev = wireBig(ev.kv?.mod_revision);
        if (lastRev !== 0n && modRev > lastRev) {
          await flush();
          next = lastRev + 1n;
        }
        lastRev = modRev;
        const k = rename(unb64(ev.kv?.key));
        ops.push(isEventDelete(ev.type) ? { request_delete_range: { key: k } } : { request_put: { key: k, value: ev.kv?.value ?? "" } });
        total++;
      }
      await flush();
      if (lastRev !== 0n) next = lastRev + 1n;
    };
    const watchEnd = prefix.length === 0 ? Buffer.from([0]) : prefixRangeEnd(prefix);
    for (let backoff = 100; ; ) {
      const controller = new AbortController();
      try {
        await ctx.client.stream(
          "/v3/watch",
          { create_request: { key: key0(prefix).toString("base64"), range_end: watchEnd.toString("base64"), start_revision: next.toString() } },
          (result) => {
            const r = result as WireWatchResponse;
            if (failure !== undefined) return;
            if (r.canceled === true || wireBig(r.compact_revision) !== 0n) {
              failure =
                wireBig(r.compact_revision) !== 0n
                  ? new V3Error(11, "etcdserver: mvcc: required revision has been compacted")
                  : new V3Error(2, r.cancel_reason ?? "watch canceled");
              controller.abort();
              return;
            }
            if ((r.events ?? []).length === 0) return;
            queue = queue.then(() => apply(r)).catch((err: unknown) => {
              failure ??= err;
              controller.abort();
            });
          },
          { signal: controller.signal, connectTimeoutMs: inv.globals.dialTimeoutMs },
        );
      } catch (err) {
        if (failure === undefined && !isConnectionLoss(err)) return fail(err);
      }
      await queue;
      if (failure !== undefined) return fail(failure);
      // The stream ended or the source went away: watch again from the first revision
      // not applied yet, as clientv3's watcher resumes.
      await waitMs(backoff);
      backoff = Math.min(backoff * 2, 2000);
    }
  } finally {
    clearInterval(ticker);
  }
}

const key0 = (prefix: Buffer): Buffer => (prefix.length === 0 ? Buffer.from([0]) : prefix);

function isConnectionLoss(err: unknown): boolean {
  if (err instanceof NetworkError) return true;
  return err instanceof ClusterError && err.errors.every((e) => e instanceof NetworkError);
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 1) throw v3Fail(V3Exit.BadArgs, "make-mirror takes one destination argument");
  const dc = await destClient(inv, inv.args[0] ?? "");
  try {
    return await withV3Context(inv, io, (ctx) => mirror(ctx, dc, io));
  } finally {
    dc.close();
  }
}
