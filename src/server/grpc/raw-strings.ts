// proto3 `string` fields as etcd 3.4 reads them: gogoproto does not check UTF-8, so a user
// name, role name, password or peer URL of any bytes is stored and answered back byte for
// byte. @bufbuild's decoder refuses such bytes (or, lenient, turns them into U+FFFD, which
// would not round-trip). Installed as @bufbuild's text encoding for this process: valid
// UTF-8 takes the native path unchanged; each byte that is not part of a valid UTF-8
// sequence becomes the lone surrogate U+DC80..U+DCFF (Python's "surrogateescape"), which
// no valid UTF-8 decodes to, and the encoder writes those back as the byte itself. The
// strings stay JS strings end to end (JSON in the log escapes lone surrogates losslessly).
import { configureTextEncoding } from "@bufbuild/protobuf/wire";

const ESCAPE_BASE = 0xdc00;
const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();
// String.prototype.isWellFormed (Node 20; the compiler's lib predates it).
const wellFormed = String.prototype as unknown as { isWellFormed(this: string): boolean };
const isWellFormed = (s: string): boolean => wellFormed.isWellFormed.call(s);

/** False for a string decoded from bytes that are not UTF-8 (it holds escaped bytes). */
export const isValidUtf8 = isWellFormed;

/** The length of the valid UTF-8 sequence at `i` (RFC 3629, as Go's utf8.DecodeRune), or 0. */
function sequenceLength(b: Uint8Array, i: number): number {
  const b0 = b[i]!;
  if (b0 < 0x80) return 1;
  const cont = (j: number, lo = 0x80, hi = 0xbf): boolean => {
    const x = b[i + j];
    return x !== undefined && x >= lo && x <= hi;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const lo = b0 === 0xe0 ? 0xa0 : 0x80;
    const hi = b0 === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/** Bytes as a string: valid UTF-8 decoded, any other byte escaped as U+DC00 + byte. */
export function decodeRaw(bytes: Uint8Array): string {
  try {
    return fatal.decode(bytes);
  } catch {
    let out = "";
    let run = 0;
    let i = 0;
    while (i < bytes.length) {
      const n = sequenceLength(bytes, i);
      if (n > 0) {
        i += n;
        continue;
      }
      out += fatal.decode(bytes.subarray(run, i)) + String.fromCharCode(ESCAPE_BASE + bytes[i]!);
      run = ++i;
    }
    return out + fatal.decode(bytes.subarray(run, i));
  }
}

/** A string as bytes: UTF-8, an escaped byte (U+DC80..U+DCFF) as itself, any other lone surrogate U+FFFD. */
export function encodeRaw(text: string): Uint8Array<ArrayBuffer> {
  if (isWellFormed(text)) return encoder.encode(text);
  const parts: number[] = [];
  let run = 0;
  const flush = (to: number): void => {
    for (const x of encoder.encode(text.slice(run, to))) parts.push(x);
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    if (c >= ESCAPE_BASE + 0x80 && c <= ESCAPE_BASE + 0xff) {
      flush(i);
      parts.push(c - ESCAPE_BASE);
      run = i + 1;
    }
  }
  flush(text.length);
  return Uint8Array.from(parts);
}

let installed = false;

/** Makes @bufbuild's string fields carry any bytes, as gogoproto's do (idempotent). */
export function installRawStrings(): void {
  if (installed) return;
  installed = true;
  configureTextEncoding({
    checkUtf8: () => true,
    decodeUtf8: (bytes) => decodeRaw(bytes),
    encodeUtf8: (text) => encodeRaw(text),
    encodeUtf8Into(text, dest) {
      if (isWellFormed(text)) return encoder.encodeInto(text, dest);
      const bytes = encodeRaw(text);
      dest.set(bytes);
      return { written: bytes.length };
    },
  });
}
