// Writes the store image (format in snapshot.ts) a slice at a time, while the store keeps
// changing, and still produces exactly the state of the moment the writer was created.
//
// Why: a snapshot of a large store (100k+ keys) took 0.3-1.5 s in one piece, during which
// a member answered nothing and sent no heartbeats. etcd clones its tree and marshals the
// clone off its raft loop; with one thread we copy on write instead:
// - the store calls capture(n) before it changes n's fields or n's children (first change
//   only: the copy is the state at creation), and the writer uses the copy if it has one;
// - a directory's children are walked with the Map's own iterator; if the directory
//   changes before the walk is through it, the walk goes on from the same position in the
//   copy (the first change is the first difference from the state at creation);
// - nodes added later are not reachable from the copies; removed ones still are, and
//   nothing changes a node once it is detached.
// Pure: no I/O, no clock. The caller decides how big a slice is and when the next one runs.

import type { V2Event } from "./event.ts";
import type { V2Node } from "./node.ts";

export const IMAGE_VERSION = 1;

export interface StoreImage {
  index: number;
  namespaces: readonly string[];
  root: V2Node;
  history: { event: V2Event; refresh: boolean }[];
}

/** A node's serialized fields as they were before its first change. */
interface Copy {
  createdIndex: number;
  modifiedIndex: number;
  expireTime: number;
  value: string;
  children: Children | null;
}

/** A directory's children as two flat arrays (no pair per child: a directory may hold 100k). */
interface Children {
  names: string[];
  nodes: V2Node[];
}

interface Frame {
  dir: V2Node;
  /** The live children, until the directory changes. */
  live: Iterator<[string, V2Node]> | undefined;
  /** Or the copy taken at its first change. */
  copy: Children | undefined;
  /** Children written so far. */
  next: number;
}

export class StoreImageWriter {
  #out: string[] = [];
  readonly #copies = new Map<V2Node, Copy>();
  readonly #stack: Frame[] = [];
  readonly #history: StoreImage["history"];
  #finished = false;

  constructor(img: StoreImage) {
    // The history is a ring that keeps moving: take its entries now (at most its capacity).
    this.#history = img.history.slice();
    this.#out.push(`{"v":${IMAGE_VERSION},"index":${img.index},"ns":${JSON.stringify(img.namespaces)},"root":`);
    this.#open(img.root, "");
  }

  /** True once the whole image is written: capture() is no longer needed. */
  get finished(): boolean {
    return this.#finished;
  }

  /** Nodes copied because they changed while the image was being written. */
  get copied(): number {
    return this.#copies.size;
  }

  /** The store is about to change n (its value, indexes, TTL or children). */
  capture(n: V2Node): void {
    if (this.#finished || this.#copies.has(n)) return;
    const children = n.children === null ? null : { names: [...n.children.keys()], nodes: [...n.children.values()] };
    this.#copies.set(n, { createdIndex: n.createdIndex, modifiedIndex: n.modifiedIndex, expireTime: n.expireTime, value: n.value, children });
    if (children === null) return;
    // A directory being walked: go on in the copy (the live Map was unchanged up to now).
    for (const f of this.#stack) {
      if (f.dir === n && f.live !== undefined) {
        f.live = undefined;
        f.copy = children;
      }
    }
  }

  /** Writes up to `budget` more nodes; true when the image is complete. */
  step(budget: number): boolean {
    let left = budget;
    while (left > 0 && this.#stack.length > 0) {
      const top = this.#stack[this.#stack.length - 1] as Frame;
      let name: string | undefined;
      let child: V2Node | undefined;
      if (top.copy !== undefined) {
        name = top.copy.names[top.next];
        child = top.copy.nodes[top.next];
      } else {
        const r = (top.live as Iterator<[string, V2Node]>).next();
        if (r.done !== true) [name, child] = r.value;
      }
      if (name !== undefined && child !== undefined) {
        if (top.next > 0) this.#out.push(",");
        top.next++;
        this.#open(child, name);
        left--;
      } else {
        this.#out.push("]]");
        this.#stack.pop();
      }
    }
    if (this.#stack.length === 0 && !this.#finished) this.#end();
    return this.#finished;
  }

  /** The text written since the last take() (whole JSON tokens: a slice never splits one). */
  take(): string {
    const s = this.#out.join("");
    this.#out = [];
    return s;
  }

  /** The image text; call after step() returned true (and no take()). */
  text(): string {
    if (!this.#finished) throw new Error("StoreImageWriter: the image is not complete");
    return this.#out.join("");
  }

  /** Writes everything left in one go (a small store, or no one else waiting). */
  finish(): string {
    while (!this.step(Number.MAX_SAFE_INTEGER));
    return this.text();
  }

  #open(n: V2Node, name: string): void {
    const c = this.#copies.get(n);
    const created = c?.createdIndex ?? n.createdIndex;
    const modified = c?.modifiedIndex ?? n.modifiedIndex;
    const expire = c?.expireTime ?? n.expireTime;
    this.#out.push(`[${JSON.stringify(name)},${created},${modified},${expire},`);
    if (n.children === null) {
      this.#out.push(JSON.stringify(c?.value ?? n.value), "]");
      return;
    }
    this.#out.push("[");
    const copy = c?.children ?? undefined;
    this.#stack.push({ dir: n, live: copy === undefined ? n.children.entries() : undefined, copy, next: 0 });
  }

  #end(): void {
    this.#out.push(',"history":[');
    let first = true;
    for (const { event, refresh } of this.#history) {
      if (!first) this.#out.push(",");
      first = false;
      const prev = event.prevNode === undefined ? "0" : JSON.stringify(event.prevNode);
      this.#out.push(`[${JSON.stringify(event.action)},${JSON.stringify(event.node)},${prev},${refresh ? 1 : 0}]`);
    }
    this.#out.push("]}");
    this.#finished = true;
    this.#copies.clear();
  }
}
