// A tiny authoritative DNS server on 127.0.0.1 (UDP) for SRV discovery tests: it answers
// SRV, A and AAAA questions from a table that a test may change at any time. Point kvctl at
// it with KV_DNS_SERVER=127.0.0.1:<port>. Names are matched case-insensitively, without the
// trailing dot. A name with no record at all gets NXDOMAIN; a known name without records of
// the asked type gets an empty NOERROR answer (NODATA), as a real server answers.
//
// Wire format (RFC 1035 4.1): a 12-byte header, the question (labels, type, class), then
// answer records. Answers point back at the question's name (compression pointer 0xC00C);
// SRV targets (RFC 2782) are written uncompressed.
import { createSocket, type Socket } from "node:dgram";
import { isIP } from "node:net";

export interface SrvAnswer {
  target: string;
  port: number;
  priority?: number;
  weight?: number;
}

export interface DnsTable {
  /** "_etcd-server._tcp.example.test" -> records. */
  srv?: Record<string, SrvAnswer[]>;
  /** host name -> IPv4 and IPv6 addresses (AAAA answers come from the IPv6 ones). */
  addresses?: Record<string, string[]>;
}

export const DnsType = { A: 1, AAAA: 28, SRV: 33 } as const;
const TYPE_NAMES: Record<number, string> = { 1: "A", 28: "AAAA", 33: "SRV" };

export interface TestDnsServer {
  port: number;
  /** "127.0.0.1:<port>", the value for KV_DNS_SERVER. */
  address: string;
  /** Replaces the table; later questions see the new records. */
  setTable(table: DnsTable): void;
  /** Every question asked so far, as "SRV _etcd-server._tcp.example.test". */
  readonly questions: string[];
  close(): Promise<void>;
}

const norm = (name: string): string => name.toLowerCase().replace(/\.$/, "");

/** Reads the question: its name, type, and the offset just after it. */
function readQuestion(msg: Buffer): { name: string; type: number; end: number } | undefined {
  let off = 12;
  const labels: string[] = [];
  for (;;) {
    const len = msg[off];
    if (len === undefined || len > 63) return undefined; // no compression in questions
    off++;
    if (len === 0) break;
    labels.push(msg.subarray(off, off + len).toString("latin1"));
    off += len;
  }
  if (off + 4 > msg.length) return undefined;
  return { name: labels.join("."), type: msg.readUInt16BE(off), end: off + 4 };
}

function encodeName(name: string): Buffer {
  const parts = norm(name).split(".").filter((l) => l !== "");
  return Buffer.concat([...parts.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, "latin1")])), Buffer.from([0])]);
}

/** One answer record for the question's name (pointer to offset 12), class IN, TTL 60 s. */
function record(type: number, rdata: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt32BE(60, 6);
  head.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([head, rdata]);
}

function ipv6Bytes(ip: string): Buffer {
  const [head = "", tail = ""] = ip.split("::");
  const h = head === "" ? [] : head.split(":");
  const t = tail === "" ? [] : tail.split(":");
  const groups = ip.includes("::") ? [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** The answer to one query datagram, or undefined to stay silent (not a query we read). */
export function answer(query: Buffer, table: DnsTable): Buffer | undefined {
  if (query.length < 12 || (query[2]! & 0x80) !== 0) return undefined;
  const q = readQuestion(query);
  if (q === undefined) return undefined;
  const name = norm(q.name);
  const srv = Object.entries(table.srv ?? {}).find(([k]) => norm(k) === name)?.[1];
  const addrs = Object.entries(table.addresses ?? {}).find(([k]) => norm(k) === name)?.[1];
  const answers: Buffer[] = [];
  if (q.type === DnsType.SRV) {
    for (const s of srv ?? []) {
      const fixed = Buffer.alloc(6);
      fixed.writeUInt16BE(s.priority ?? 0, 0);
      fixed.writeUInt16BE(s.weight ?? 0, 2);
      fixed.writeUInt16BE(s.port, 4);
      answers.push(record(DnsType.SRV, Buffer.concat([fixed, encodeName(s.target)])));
    }
  } else if (q.type === DnsType.A) {
    for (const ip of (addrs ?? []).filter((a) => isIP(a) === 4)) answers.push(record(DnsType.A, Buffer.from(ip.split(".").map(Number))));
  } else if (q.type === DnsType.AAAA) {
    for (const ip of (addrs ?? []).filter((a) => isIP(a) === 6)) answers.push(record(DnsType.AAAA, ipv6Bytes(ip)));
  }
  const nxdomain = srv === undefined && addrs === undefined;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // QR=1, the query's opcode, AA=1, RD copied; RA=1, RCODE 0 or 3 (NXDOMAIN).
  header[2] = 0x80 | (query[2]! & 0x78) | 0x04 | (query[2]! & 0x01);
  header[3] = 0x80 | (nxdomain ? 3 : 0);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, query.subarray(12, q.end), ...answers]);
}

/** Starts the server on 127.0.0.1:`port`. Register `after(() => dns.close())`. */
export async function startDnsServer(opts: { port: number; table?: DnsTable }): Promise<TestDnsServer> {
  let table: DnsTable = opts.table ?? {};
  const questions: string[] = [];
  const socket: Socket = createSocket("udp4");
  socket.on("message", (msg, rinfo) => {
    const q = readQuestion(msg);
    if (q !== undefined) questions.push(`${TYPE_NAMES[q.type] ?? String(q.type)} ${norm(q.name)}`);
    const reply = answer(msg, table);
    if (reply !== undefined) socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(opts.port, "127.0.0.1", () => {
      socket.off("error", reject);
      resolve();
    });
  });
  return {
    port: opts.port,
    address: `127.0.0.1:${opts.port}`,
    setTable(t) {
      table = t;
    },
    questions,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
