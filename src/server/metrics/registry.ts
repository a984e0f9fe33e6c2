// A small Prometheus registry: counters, gauges and histograms with labels, written in the
// text exposition format 0.0.4 the way Go's client_golang writes it (families sorted by
// name, label names sorted, numbers in Go's shortest %g), so a scrape of kvctl reads like
// a scrape of etcd. No dependency: the whole format is a page of code, and prom-client
// would add its start-up cost to every member for the dozen features used here.

export type MetricType = "counter" | "gauge" | "histogram";
export type LabelValues = Readonly<Record<string, string>>;

/** One exposed line: a name suffix (`_bucket`, `_sum`...), its labels, its value. */
export interface Sample {
  suffix: string;
  labels: LabelValues;
  value: number;
}

export interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  samples(): Sample[];
}

/** Go's strconv.FormatFloat(v, 'g', -1, 64), which client_golang uses for every value. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const [mantissa = "0", expText = "0"] = v.toExponential().split("e");
  const exp = Number(expText);
  // Shortest %g switches to an exponent below 1e-4 and from 1e6 on (Go's eprec of 6).
  if (exp >= -4 && exp < 6) return String(v);
  const abs = Math.abs(exp);
  return `${mantissa}e${exp < 0 ? "-" : "+"}${abs < 10 ? "0" : ""}${abs}`;
}

function escapeHelp(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function escapeLabel(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function labelText(labels: LabelValues, extra?: [string, string]): string {
  const pairs = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k] ?? "")}"`);
  if (extra !== undefined) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

/** Series of one family keyed by their label values, in a stable key order. */
class Series<T> {
  readonly #labelNames: readonly string[];
  readonly #byKey = new Map<string, { labels: LabelValues; state: T }>();
  readonly #init: () => T;
  #unlabelled: T | undefined;

  constructor(labelNames: readonly string[], init: () => T) {
    // Sorted: client_golang orders a family's metrics by their label values taken in label name order.
    this.#labelNames = [...labelNames].sort();
    this.#init = init;
  }

  get(labels: LabelValues): T {
    // The hot path (a counter bumped per request or per message) builds no key for unlabelled series.
    const names = this.#labelNames;
    if (names.length === 0) return (this.#unlabelled ??= this.#create("", labels));
    // The values joined by NULs, built without an intermediate array.
    let key = labels[names[0]!] ?? "";
    for (let i = 1; i < names.length; i++) key += `\u0000${labels[names[i]!] ?? ""}`;
    return this.#byKey.get(key)?.state ?? this.#create(key, labels);
  }

  #create(key: string, labels: LabelValues): T {
    const own: Record<string, string> = {};
    for (const n of this.#labelNames) own[n] = labels[n] ?? "";
    const s = { labels: own, state: this.#init() };
    this.#byKey.set(key, s);
    return s.state;
  }

  /** Entries sorted by label values, as client_golang orders the metrics of a family. */
  entries(): Array<{ labels: LabelValues; state: T }> {
    return [...this.#byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  }
}

/** A family of plain values, one per label set: what Counter and Gauge keep alike. */
abstract class ValueFamily implements Family {
  abstract readonly type: "counter" | "gauge";
  protected readonly series: Series<{ v: number }>;

  readonly name: string;
  readonly help: string;

  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.series = new Series(labelNames, () => ({ v: 0 }));
    if (labelNames.length === 0) this.series.get({});
  }

  value(labels: LabelValues = {}): number {
    return this.series.get(labels).v;
  }

  samples(): Sample[] {
    return this.series.entries().map((e) => ({ suffix: "", labels: e.labels, value: e.state.v }));
  }
}

export class Counter extends ValueFamily {
  readonly type = "counter";

  inc(labels: LabelValues = {}, n = 1): void {
    if (n < 0) throw new RangeError(`counter ${this.name} cannot decrease`);
    this.series.get(labels).v += n;
  }

  /**
   * An incrementer of one series (client_golang's WithLabelValues kept by the caller): a
   * counter bumped per request then builds no label key per event. Creates the series.
   */
  incrementer(labels: LabelValues): () => void {
    const s = this.series.get(labels);
    return () => {
      s.v++;
    };
  }

  /** Creates the series at 0 (client_golang's WithLabelValues without Inc): it shows before its first event. */
  touch(labels: LabelValues): void {
    this.series.get(labels);
  }
}

export class Gauge extends ValueFamily {
  readonly type = "gauge";

  set(v: number, labels: LabelValues = {}): void {
    this.series.get(labels).v = v;
  }

  inc(labels: LabelValues = {}, n = 1): void {
    this.series.get(labels).v += n;
  }

  dec(labels: LabelValues = {}, n = 1): void {
    this.series.get(labels).v -= n;
  }
}

/** A gauge whose value is read when scraped (etcd's GaugeFunc): nothing to keep in step. */
export class GaugeFunc implements Family {
  readonly type = "gauge";

  readonly name: string;
  readonly help: string;
  readonly read: () => number | Array<{ labels: LabelValues; value: number }>;
  readonly metricType: "gauge" | "counter";

  constructor(name: string, help: string, read: () => number | Array<{ labels: LabelValues; value: number }>, metricType: "gauge" | "counter" = "gauge") {
    this.name = name;
    this.help = help;
    this.read = read;
    this.metricType = metricType;
  }

  samples(): Sample[] {
    const v = this.read();
    if (typeof v === "number") return [{ suffix: "", labels: {}, value: v }];
    return v.map((s) => ({ suffix: "", labels: s.labels, value: s.value }));
  }
}

/** A counter read when scraped, for totals another module already keeps. */
export function counterFunc(name: string, help: string, read: () => number | Array<{ labels: LabelValues; value: number }>): GaugeFunc {
  return new GaugeFunc(name, help, read, "counter");
}

/** prometheus.ExponentialBuckets(start, factor, count). */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  let b = start;
  for (let i = 0; i < count; i++) {
    out.push(b);
    b *= factor;
  }
  return out;
}

interface HistogramState {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram implements Family {
  readonly type = "histogram";
  readonly #series: Series<HistogramState>;
  readonly buckets: readonly number[];

  readonly name: string;
  readonly help: string;

  constructor(name: string, help: string, buckets: readonly number[], labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.buckets = [...buckets].sort((a, b) => a - b);
    this.#series = new Series(labelNames, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    if (labelNames.length === 0) this.#series.get({});
  }

  observe(v: number, labels: LabelValues = {}): void {
    const s = this.#series.get(labels);
    // Bucket counts are kept per bucket and made cumulative when written.
    const i = this.buckets.findIndex((b) => v <= b);
    if (i >= 0) s.counts[i] = (s.counts[i] ?? 0) + 1;
    s.sum += v;
    s.count++;
  }

  /** An observer of one series (WithLabelValues kept by the caller): no label key per event. Creates the series. */
  observer(labels: LabelValues): (v: number) => void {
    const s = this.#series.get(labels);
    const buckets = this.buckets;
    return (v) => {
      const i = buckets.findIndex((b) => v <= b);
      if (i >= 0) s.counts[i] = (s.counts[i] ?? 0) + 1;
      s.sum += v;
      s.count++;
    };
  }

  count(labels: LabelValues = {}): number {
    return this.#series.get(labels).count;
  }

  samples(): Sample[] {
    const out: Sample[] = [];
    for (const { labels, state } of this.#series.entries()) {
      let acc = 0;
      this.buckets.forEach((b, i) => {
        acc += state.counts[i] ?? 0;
        out.push({ suffix: "_bucket", labels: { ...labels, le: formatValue(b) }, value: acc });
      });
      out.push({ suffix: "_bucket", labels: { ...labels, le: "+Inf" }, value: state.count });
      out.push({ suffix: "_sum", labels, value: state.sum });
      out.push({ suffix: "_count", labels, value: state.count });
    }
    return out;
  }
}

export class Registry {
  readonly #families = new Map<string, Family>();

  register<F extends Family>(f: F): F {
    if (this.#families.has(f.name)) throw new Error(`metric ${f.name} registered twice`);
    this.#families.set(f.name, f);
    return f;
  }

  /** The text exposition format (version 0.0.4); families with no series are left out, as Go does. */
  expose(): string {
    const lines: string[] = [];
    const names = [...this.#families.keys()].sort();
    for (const name of names) {
      const f = this.#families.get(name)!;
      const samples = f.samples();
      if (samples.length === 0) continue;
      const type = f instanceof GaugeFunc ? f.metricType : f.type;
      lines.push(`# HELP ${name} ${escapeHelp(f.help)}`, `# TYPE ${name} ${type}`);
      for (const s of samples) {
        // `le` goes last, after the sorted label names, as client_golang writes buckets.
        const { le, ...rest } = s.labels;
        lines.push(`${name}${s.suffix}${labelText(rest, le === undefined ? undefined : ["le", le])} ${formatValue(s.value)}`);
      }
    }
    return lines.join("\n") + "\n";
  }
}

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
