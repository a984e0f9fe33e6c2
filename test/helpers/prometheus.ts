// A small parser for the Prometheus text exposition format (0.0.4), enough to check what
// kvctl and etcd expose: families with their TYPE, label names and samples.

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedFamily {
  type: string;
  help: string;
  /** Label names over the family's samples, without `le` and `quantile`. */
  labelNames: Set<string>;
  samples: ParsedSample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;

function unescapeLabel(s: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function parseNumber(s: string): number {
  if (s === "+Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  if (s === "NaN") return NaN;
  const n = Number(s);
  if (Number.isNaN(n)) throw new Error(`bad sample value ${s}`);
  return n;
}

/** Families by name; throws on a line that is not valid exposition text. */
export function parseExposition(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const family = (name: string): ParsedFamily => {
    let f = families.get(name);
    if (f === undefined) {
      f = { type: "untyped", help: "", labelNames: new Set(), samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(line);
      if (m === null) continue;
      const f = family(m[2]!);
      if (m[1] === "TYPE") f.type = m[3]!;
      else f.help = m[3]!;
      continue;
    }
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`not an exposition line: ${line}`);
    const name = m[1]!;
    const labels: Record<string, string> = {};
    if (m[2] !== undefined && m[2] !== "") {
      LABEL.lastIndex = 0;
      let consumed = 0;
      for (let l = LABEL.exec(m[2]); l !== null; l = LABEL.exec(m[2])) {
        labels[l[1]!] = unescapeLabel(l[2]!);
        consumed = LABEL.lastIndex;
      }
      if (consumed !== m[2].length) throw new Error(`bad labels in: ${line}`);
    }
    // A histogram's or summary's samples belong to the family without the suffix.
    let base = name;
    for (const suffix of ["_bucket", "_sum", "_count"]) {
      const b = name.slice(0, -suffix.length);
      if (name.endsWith(suffix) && ["histogram", "summary"].includes(families.get(b)?.type ?? "")) base = b;
    }
    const f = family(base);
    for (const k of Object.keys(labels)) if (k !== "le" && k !== "quantile") f.labelNames.add(k);
    f.samples.push({ name, labels, value: parseNumber(m[3]!) });
  }
  return families;
}
