// Keys as the index sees them. A key is raw bytes; the index holds it as a latin1 string
// (one char per byte, 0-255), because JS compares strings by UTF-16 code unit, which for
// latin1 strings is exactly the byte order etcd sorts by (bytes.Compare). Converting is
// lossless both ways.

/** A key's index form: one char per byte. */
export type KeyId = string;

export function keyId(key: Buffer): KeyId {
  return key.toString("latin1");
}

export function keyBytes(id: KeyId): Buffer {
  return Buffer.from(id, "latin1");
}

export function compareKeyIds(a: KeyId, b: KeyId): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * What [key, rangeEnd) selects, by etcd's rules: an empty rangeEnd is the single key,
 * "\0" is every key >= key, anything else is the half-open interval [key, rangeEnd).
 * `end` is undefined for the single-key and from-key forms.
 */
export type KeySpan =
  | { kind: "single"; key: KeyId }
  | { kind: "from"; key: KeyId }
  | { kind: "interval"; key: KeyId; end: KeyId };

export function keySpan(key: Buffer, rangeEnd: Buffer): KeySpan {
  const id = keyId(key);
  if (rangeEnd.length === 0) return { kind: "single", key: id };
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return { kind: "from", key: id };
  return { kind: "interval", key: id, end: keyId(rangeEnd) };
}

export function spanContains(span: KeySpan, id: KeyId): boolean {
  switch (span.kind) {
    case "single":
      return id === span.key;
    case "from":
      return id >= span.key;
    case "interval":
      return id >= span.key && id < span.end;
  }
}

/**
 * The range_end that selects every key starting with `prefix` (clientv3's GetPrefixRangeEnd):
 * the prefix with its last byte below 0xff incremented and what follows dropped; "\0"
 * (every key) when all bytes are 0xff or the prefix is empty.
 */
export function prefixEnd(prefix: KeyId): KeyId {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const c = prefix.charCodeAt(i);
    if (c < 0xff) return prefix.slice(0, i) + String.fromCharCode(c + 1);
  }
  return "\0";
}

/** prefixEnd for bytes: the range_end of a prefix range (clientv3.WithPrefix). */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  return keyBytes(prefixEnd(keyId(prefix)));
}
