// HPACK (RFC 7541): the decoder of a connection's request header blocks (static and
// dynamic tables, Huffman, table size updates) and the encoder of its responses (static
// table indexes and literals never indexed, no Huffman: our blocks are few and constant,
// so a dynamic table would save the client little and cost us its bookkeeping).
// Pure: bytes in, fields out; every malformed input is an HpackError (COMPRESSION_ERROR).
import { HUFFMAN_CODES } from "./huffman-table.ts";

export class HpackError extends Error {}

/** RFC 7541 Appendix A. */
export const STATIC_TABLE: ReadonlyArray<readonly [string, string]> = [
  [":authority", ""], [":method", "GET"], [":method", "POST"], [":path", "/"], [":path", "/index.html"],
  [":scheme", "http"], [":scheme", "https"], [":status", "200"], [":status", "204"], [":status", "206"],
  [":status", "304"], [":status", "400"], [":status", "404"], [":status", "500"], ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"], ["accept-language", ""], ["accept-ranges", ""], ["accept", ""],
  ["access-control-allow-origin", ""], ["age", ""], ["allow", ""], ["authorization", ""], ["cache-control", ""],
  ["content-disposition", ""], ["content-encoding", ""], ["content-language", ""], ["content-length", ""],
  ["content-location", ""], ["content-range", ""], ["content-type", ""], ["cookie", ""], ["date", ""], ["etag", ""],
  ["expect", ""], ["expires", ""], ["from", ""], ["host", ""], ["if-match", ""], ["if-modified-since", ""],
  ["if-none-match", ""], ["if-range", ""], ["if-unmodified-since", ""], ["last-modified", ""], ["link", ""],
  ["location", ""], ["max-forwards", ""], ["proxy-authenticate", ""], ["proxy-authorization", ""], ["range", ""],
  ["referer", ""], ["refresh", ""], ["retry-after", ""], ["server", ""], ["set-cookie", ""],
  ["strict-transport-security", ""], ["transfer-encoding", ""], ["user-agent", ""], ["vary", ""], ["via", ""],
  ["www-authenticate", ""],
];

/** A header list in wire order: name, value, name, value, ... (names lower-case). */
export type HeaderList = readonly string[];

/** Huffman decoding tree: node i's children at 2i, 2i+1; a leaf holds -(symbol + 1). */
const TREE = buildTree();
/** For each node, whether the path to it is all ones and at most 7 bits (valid padding). */
const PADDING_OK = new Uint8Array(TREE.length >> 1);

function buildTree(): Int32Array {
  const tree = new Int32Array(2 * 600);
  let nodes = 1;
  const addSymbol = (sym: number, code: number, len: number): void => {
    let node = 0;
    for (let bit = len - 1; bit >= 0; bit--) {
      const slot = 2 * node + ((code >>> bit) & 1);
      if (bit === 0) {
        tree[slot] = -(sym + 1);
        return;
      }
      if (tree[slot] === 0) tree[slot] = nodes++;
      node = tree[slot]!;
    }
  };
  for (let s = 0; s < 256; s++) addSymbol(s, HUFFMAN_CODES[2 * s]!, HUFFMAN_CODES[2 * s + 1]!);
  addSymbol(256, 0x3fffffff, 30);
  return tree;
}
{
  let node = 0;
  for (let depth = 0; depth <= 7; depth++) {
    PADDING_OK[node] = 1;
    node = TREE[2 * node + 1]!;
    if (node <= 0) break;
  }
}

/** Decodes a Huffman-coded string (RFC 7541 §5.2): EOS, or padding not of ones or over 7 bits, is an error. */
export function huffmanDecode(buf: Uint8Array, start: number, end: number): string {
  let node = 0;
  let out = "";
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      const next = TREE[2 * node + ((byte >> bit) & 1)]!;
      if (next < 0) {
        const sym = -next - 1;
        if (sym === 256) throw new HpackError("EOS in a Huffman string");
        out += String.fromCharCode(sym);
        node = 0;
      } else if (next === 0) {
        throw new HpackError("invalid Huffman code");
      } else node = next;
    }
  }
  if (PADDING_OK[node] !== 1) throw new HpackError("invalid Huffman padding");
  return out;
}

/** The Huffman encoding of a latin1 string (tests build RFC examples with it; responses use none). */
export function huffmanEncode(s: string): Buffer {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const code = HUFFMAN_CODES[2 * sym]!;
    const len = HUFFMAN_CODES[2 * sym + 1]!;
    for (let b = len - 1; b >= 0; b--) {
      acc = (acc << 1) | ((code >>> b) & 1);
      if (++bits === 8) {
        out.push(acc);
        acc = 0;
        bits = 0;
      }
    }
  }
  if (bits > 0) out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) & 0xff);
  return Buffer.from(out);
}

const ENTRY_OVERHEAD = 32;
const EMPTY = new Uint8Array(0);
/** Longest header block kept for the next (a unary call's is 20-60 bytes; a token's is more). */
const BLOCK_CACHE_BYTES = 256;
/** Largest integer accepted: no header field or table size comes near it. */
const MAX_INT = 2 ** 31 - 1;

/** A connection's request decoder: its dynamic table lives across header blocks. */
export class HpackDecoder {
  /** Newest first. */
  #names: string[] = [];
  #values: string[] = [];
  #size = 0;
  #maxSize: number;
  /** What SETTINGS_HEADER_TABLE_SIZE allows the encoder (ours: the default). */
  readonly #limit: number;
  #pos = 0;
  #buf: Uint8Array = EMPTY;
  /** Longest string literal, encoded or decoded (then HpackError); 0: no limit. */
  readonly #maxString: number;
  #truncated = false;
  /**
   * The last Huffman literal decoded, its bytes and its text: nghttp2's encoder (h2load,
   * node:http2, so grpc-js) sends `:path` as a literal without indexing in every request,
   * the same bytes call after call, and decoding them bit by bit was most of a request's
   * header block.
   */
  #lastHuffman: Uint8Array = EMPTY;
  #lastHuffmanText = "";
  /**
   * The last block that did not change the table, its size limit and its list: clients
   * send the same block call after call (every field indexed, or `:path` as a literal),
   * and while the table stays as it was the same bytes mean the same fields.
   */
  #lastBlock: Uint8Array | undefined;
  #lastMax = 0;
  #lastList: HeaderList = [];
  /** Room left in the list being decoded (decode's maxListSize). */
  #room = 0;

  /**
   * `maxString`: x/net/http2's hpack decoder (grpc-go's) refuses a string longer than the
   * header list limit (ErrStringLength, a COMPRESSION_ERROR).
   */
  constructor(limit = 4096, maxString = 0) {
    this.#limit = limit;
    this.#maxSize = limit;
    this.#maxString = maxString;
  }

  /** The last decode() passed its `maxListSize`: the list it returned is cut short. */
  get truncated(): boolean {
    return this.#truncated;
  }

  /** Entries in the dynamic table (tests). */
  get tableLength(): number {
    return this.#names.length;
  }

  get tableSize(): number {
    return this.#size;
  }

  /**
   * Decodes one whole header block; throws HpackError (then the connection is over). Past
   * `maxListSize` (RFC 9113 §6.5.2's size: name + value + 32 per field) the fields stop
   * being collected and `truncated` is set, but the block is still decoded to its end, so
   * the dynamic table stays in step (x/net/http2's MetaHeadersFrame.Truncated).
   */
  decode(block: Uint8Array, maxListSize = Infinity): HeaderList {
    const last = this.#lastBlock;
    if (last !== undefined && maxListSize === this.#lastMax && sameBytes(last, block, 0, block.length)) {
      this.#truncated = false;
      return this.#lastList;
    }
    this.#buf = block;
    this.#pos = 0;
    this.#truncated = false;
    this.#room = maxListSize;
    const out: string[] = [];
    let fieldsSeen = false;
    let changesTable = false;
    while (this.#pos < block.length) {
      const b = block[this.#pos]!;
      if (b & 0x80) {
        const idx = this.#int(7);
        this.#push(out, this.#entryName(idx), this.#entryValue(idx));
        fieldsSeen = true;
      } else if (b & 0x40) {
        const idx = this.#int(6);
        const name = idx === 0 ? this.#string() : this.#entryName(idx);
        const value = this.#string();
        this.#add(name, value);
        changesTable = true;
        this.#push(out, name, value);
        fieldsSeen = true;
      } else if (b & 0x20) {
        // RFC 7541 §4.2: only at the start of a block.
        if (fieldsSeen) throw new HpackError("dynamic table size update after a field");
        const size = this.#int(5);
        if (size > this.#limit) throw new HpackError("dynamic table size update over the limit");
        this.#maxSize = size;
        this.#evict(0);
        this.#lastBlock = undefined;
        changesTable = true;
      } else {
        // Literal without indexing (0000) or never indexed (0001).
        const idx = this.#int(4);
        const name = idx === 0 ? this.#string() : this.#entryName(idx);
        this.#push(out, name, this.#string());
        fieldsSeen = true;
      }
    }
    this.#buf = EMPTY;
    // A block that leaves the table as it found it decodes the same way until the table
    // changes: kept for the next block (#add and size updates forget it).
    if (!changesTable && !this.#truncated && block.length <= BLOCK_CACHE_BYTES) {
      this.#lastBlock = block.slice();
      this.#lastList = out;
      this.#lastMax = maxListSize;
    }
    return out;
  }

  /** Adds a field to the list being decoded, unless the list passed its size (then emptied). */
  #push(out: string[], name: string, value: string): void {
    if (this.#truncated) return;
    this.#room -= name.length + value.length + ENTRY_OVERHEAD;
    if (this.#room < 0) {
      this.#truncated = true;
      out.length = 0;
      return;
    }
    out.push(name, value);
  }

  #entryName(idx: number): string {
    if (idx === 0) throw new HpackError("index 0");
    if (idx <= STATIC_TABLE.length) return STATIC_TABLE[idx - 1]![0];
    const d = idx - STATIC_TABLE.length - 1;
    if (d >= this.#names.length) throw new HpackError(`index ${idx} beyond the tables`);
    return this.#names[d]!;
  }

  /** The value of an entry #entryName(idx) has checked. */
  #entryValue(idx: number): string {
    if (idx <= STATIC_TABLE.length) return STATIC_TABLE[idx - 1]![1];
    return this.#values[idx - STATIC_TABLE.length - 1]!;
  }

  #add(name: string, value: string): void {
    this.#lastBlock = undefined;
    const size = ENTRY_OVERHEAD + name.length + value.length;
    if (size > this.#maxSize) {
      // §4.4: an entry larger than the table empties it and is not added.
      this.#evict(this.#maxSize + 1);
      return;
    }
    this.#evict(size);
    this.#names.unshift(name);
    this.#values.unshift(value);
    this.#size += size;
  }

  /** Drops the oldest entries until `room` more bytes fit. */
  #evict(room: number): void {
    while (this.#size + room > this.#maxSize && this.#names.length > 0) {
      const n = this.#names.pop()!;
      const v = this.#values.pop()!;
      this.#size -= ENTRY_OVERHEAD + n.length + v.length;
    }
  }

  /** An integer with an N-bit prefix (§5.1). */
  #int(prefixBits: number): number {
    const buf = this.#buf;
    const max = (1 << prefixBits) - 1;
    let v = buf[this.#pos++]! & max;
    if (v < max) return v;
    let shift = 0;
    for (;;) {
      if (this.#pos >= buf.length) throw new HpackError("truncated integer");
      const b = buf[this.#pos++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (v > MAX_INT) throw new HpackError("integer overflow");
      if ((b & 0x80) === 0) return v;
      shift += 7;
    }
  }

  /** A string literal (§5.2), latin1 as node:http2 gives header values. */
  #string(): string {
    if (this.#pos >= this.#buf.length) throw new HpackError("truncated string");
    const huffman = (this.#buf[this.#pos]! & 0x80) !== 0;
    const len = this.#int(7);
    const start = this.#pos;
    const end = start + len;
    if (this.#maxString > 0 && len > this.#maxString) throw new HpackError("string too long");
    if (end > this.#buf.length) throw new HpackError("truncated string");
    this.#pos = end;
    if (!huffman) return latin1(this.#buf, start, end);
    if (sameBytes(this.#lastHuffman, this.#buf, start, end)) return this.#lastHuffmanText;
    const s = huffmanDecode(this.#buf, start, end);
    if (this.#maxString > 0 && s.length > this.#maxString) throw new HpackError("string too long");
    if (len <= HUFFMAN_CACHE_BYTES) {
      this.#lastHuffman = this.#buf.slice(start, end);
      this.#lastHuffmanText = s;
    }
    return s;
  }
}

/** Longest Huffman literal kept for the next block (a method path; not a token's value). */
const HUFFMAN_CACHE_BYTES = 64;

function sameBytes(a: Uint8Array, buf: Uint8Array, start: number, end: number): boolean {
  if (a.length !== end - start || a.length === 0) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== buf[start + i]) return false;
  return true;
}

function latin1(buf: Uint8Array, start: number, end: number): string {
  if (Buffer.isBuffer(buf)) return buf.toString("latin1", start, end);
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("latin1");
}

/** Static index by name and by name + value. */
const STATIC_BY_PAIR = new Map<string, number>();
const STATIC_BY_NAME = new Map<string, number>();
STATIC_TABLE.forEach(([n, v], i) => {
  if (!STATIC_BY_PAIR.has(`${n}\0${v}`)) STATIC_BY_PAIR.set(`${n}\0${v}`, i + 1);
  if (!STATIC_BY_NAME.has(n)) STATIC_BY_NAME.set(n, i + 1);
});

function pushInt(out: number[], v: number, prefixBits: number, first: number): void {
  const max = (1 << prefixBits) - 1;
  if (v < max) {
    out.push(first | v);
    return;
  }
  out.push(first | max);
  v -= max;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

function pushString(out: number[], s: string): void {
  const bytes = Buffer.from(s, "latin1");
  pushInt(out, bytes.length, 7, 0);
  for (const b of bytes) out.push(b);
}

/** Response header fields as node:http2 takes them (values: strings or numbers). */
export type OutgoingFields = Readonly<Record<string, string | number>>;

/**
 * A header block (without a table size update): a static index where name and value
 * match one, else a literal never added to the client's table (with the static name
 * index when there is one). Pseudo-headers first, as RFC 9113 §8.3 requires.
 */
export function encodeHeaderBlock(fields: OutgoingFields): Buffer {
  const out: number[] = [];
  const names = Object.keys(fields);
  names.sort((a, b) => (a.startsWith(":") ? 0 : 1) - (b.startsWith(":") ? 0 : 1));
  for (const name of names) {
    const value = String(fields[name]);
    const lname = name.toLowerCase();
    const both = STATIC_BY_PAIR.get(`${lname}\0${value}`);
    if (both !== undefined) {
      pushInt(out, both, 7, 0x80);
      continue;
    }
    const idx = STATIC_BY_NAME.get(lname);
    if (idx !== undefined) pushInt(out, idx, 4, 0x00);
    else {
      out.push(0x00);
      pushString(out, lname);
    }
    pushString(out, value);
  }
  return Buffer.from(out);
}

/** A dynamic table size update (§6.3), sent before a block after the client lowered its table. */
export function tableSizeUpdate(size: number): Buffer {
  const out: number[] = [];
  pushInt(out, size, 5, 0x20);
  return Buffer.from(out);
}
