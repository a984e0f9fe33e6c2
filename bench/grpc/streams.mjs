// The stream rows of bench/grpc.sh, over node:http2 with hand-encoded messages (no client
// library between the server and the clock):
//   watch <url> <watchers> <reps> [skip]
//                                   watchers on their own Watch streams (100 per connection),
//                                   one put: ms until every watcher has the event (median of
//                                   the reps after the first `skip`: 0 counts the warm-up too)
//   keepalive <url> <seconds>       LeaseKeepAlive on one stream, 16 requests in flight: req/s
import http2 from "node:http2";

const [mode, url, a1, a2, a3] = process.argv.slice(2);
const varint = (n) => {
  const out = [];
  let v = BigInt(n);
  while (v > 127n) {
    out.push(Number(v & 127n) | 128);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
};
const bytesField = (f, b) => [(f << 3) | 2, ...varint(b.length), ...b];
const intField = (f, n) => [f << 3, ...varint(n)];
const frame = (msg) => {
  const out = Buffer.alloc(5 + msg.length);
  out.writeUInt32BE(msg.length, 1);
  Buffer.from(msg).copy(out, 5);
  return out;
};
const HEADERS = (path) => ({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });

/** Calls `onMsg(payload)` for each message of a response stream. */
function messages(stream, onMsg) {
  let pending = Buffer.alloc(0);
  stream.on("data", (c) => {
    pending = pending.length === 0 ? c : Buffer.concat([pending, c]);
    while (pending.length >= 5) {
      const n = pending.readUInt32BE(1);
      if (pending.length < 5 + n) break;
      onMsg(pending.subarray(5, 5 + n));
      pending = pending.subarray(5 + n);
    }
  });
}
function unary(session, path, msg) {
  return new Promise((resolve, reject) => {
    const s = session.request(HEADERS(path));
    let out;
    messages(s, (m) => (out = Buffer.from(m)));
    // Trailers can come before the data events are delivered: settle at the end.
    let status = "";
    s.on("trailers", (t) => (status = `${t["grpc-status"]} ${t["grpc-message"] ?? ""}`));
    s.on("end", () => (status.startsWith("0 ") ? resolve(out) : reject(new Error(`${path}: ${status}`))));
    s.on("response", (h) => {
      if (h["grpc-status"] !== undefined && h["grpc-status"] !== "0") reject(new Error(`${path}: ${h["grpc-status"]} ${h["grpc-message"]}`));
    });
    s.on("error", reject);
    s.end(frame(msg));
  });
}
/** The varint of field `f` in a message (top level). */
function readVarintField(buf, f) {
  let i = 0;
  const rv = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      v |= BigInt(b & 127) << shift;
      if (b < 128) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(rv());
    if ((tag & 7) === 0) {
      const v = rv();
      if (tag >> 3 === f) return v;
    } else if ((tag & 7) === 2) {
      const n = Number(rv());
      i += n;
    }
    else throw new Error("wire type");
  }
  return undefined;
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

async function watch(watchers, reps, skip) {
  const sessions = [];
  for (let i = 0; i < Math.ceil(watchers / 100); i++) sessions.push(http2.connect(url));
  const writer = http2.connect(url);
  const key = [...Buffer.from("watch-key")];
  let waiting = 0;
  let allDone = () => undefined;
  const created = [];
  for (let i = 0; i < watchers; i++) {
    const s = sessions[i % sessions.length].request(HEADERS("/etcdserverpb.Watch/Watch"));
    let first = true;
    created.push(
      new Promise((resolve) => {
        messages(s, () => {
          if (first) {
            first = false;
            resolve();
            return;
          }
          if (--waiting === 0) allDone();
        });
      }),
    );
    // WatchRequest{create_request=1: WatchCreateRequest{key=1}}
    s.write(frame(bytesField(1, bytesField(1, key))));
  }
  await Promise.all(created);
  const times = [];
  for (let r = 0; r < reps; r++) {
    waiting = watchers;
    const done = new Promise((resolve) => (allDone = resolve));
    const t0 = performance.now();
    await unary(writer, "/etcdserverpb.KV/Put", [...bytesField(1, key), ...bytesField(2, [...Buffer.from(`v${r}`)])]);
    await done;
    times.push(performance.now() - t0);
  }
  for (const s of [...sessions, writer]) s.destroy();
  console.log(JSON.stringify({ row: "watch", watchers, skip, ms: +median(times.slice(skip)).toFixed(1), all: times.map((t) => +t.toFixed(1)) }));
}

async function keepalive(seconds) {
  const session = http2.connect(url);
  const grant = await unary(session, "/etcdserverpb.Lease/LeaseGrant", intField(1, 600));
  const id = readVarintField(grant, 2);
  if (id === undefined) throw new Error(`no lease ID in ${grant?.toString("hex")}`);
  const s = session.request(HEADERS("/etcdserverpb.Lease/LeaseKeepAlive"));
  const req = frame(intField(1, id));
  const end = performance.now() + seconds * 1000;
  let answered = 0;
  let sent = 0;
  const t0 = performance.now();
  await new Promise((resolve) => {
    messages(s, () => {
      answered++;
      if (performance.now() < end) {
        s.write(req);
        sent++;
      } else if (answered === sent) resolve();
    });
    for (let i = 0; i < 16; i++, sent++) s.write(req);
  });
  const secs = (performance.now() - t0) / 1000;
  s.close();
  session.destroy();
  console.log(JSON.stringify({ row: "keepalive", rps: Math.round(answered / secs) }));
}

if (mode === "watch") await watch(Number(a1 ?? 1000), Number(a2 ?? 5), Number(a3 ?? 0));
else if (mode === "keepalive") await keepalive(Number(a1 ?? 5));
else throw new Error("usage: streams.mjs watch|keepalive <url> ...");
