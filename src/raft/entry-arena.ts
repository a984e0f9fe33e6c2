// Where the bytes of log entries live while the in-memory log holds them (up to
// --snapshot-count entries). Entries are copied into slabs that hold nothing else: a log
// entry cut from Node's shared 8 KiB Buffer pool pinned its slab, and with it whatever
// short-lived bytes were allocated beside it (the decoded values of the same writes),
// which tripled the memory the log cost. Slabs go when every entry in them is compacted
// away, which happens in log order.
//
// A slab is just over 32 MiB so that glibc always maps it on its own (mmap) and unmaps it
// when it is freed: a smaller one lands in the malloc heap as soon as glibc's threshold
// has grown past it (it grows to the size of any mapped chunk freed, up to 32 MiB), and
// a heap chunk freed between the short-lived buffers of the writes is kept by the process
// for good. At 100k entries of 1 KiB, the ~110 MiB the log had held stayed resident after
// the snapshot compacted it. An untouched tail costs nothing: mapped pages become
// resident as they are written.
//
// The first slab is 1 MiB: 33 MiB at the first retained entry counted as external memory
// for V8 and set off two scavenges ("external memory pressure") in the middle of a
// restart, before the member serves its peers. A 1 MiB slab the malloc heap may take is
// freed at most once, so the waste described above is bounded by it; the next slabs are
// 33 MiB.

const SLAB_BYTES = 33 * 1024 * 1024;
const FIRST_SLAB_BYTES = 1024 * 1024;
/** Larger entries get an ArrayBuffer of their own (they would waste a slab's tail). */
const OWN_BUFFER_FROM = 32 * 1024;

let slab = new Uint8Array(0);
let used = 0;

/** A copy of `data` for the log to keep. */
export function retainEntryData(data: Uint8Array): Uint8Array {
  const n = data.length;
  if (n === 0) return data;
  if (n >= OWN_BUFFER_FROM) return data.slice();
  if (used + n > slab.length) {
    slab = new Uint8Array(slab.length === 0 ? FIRST_SLAB_BYTES : SLAB_BYTES);
    used = 0;
  }
  const out = slab.subarray(used, used + n);
  out.set(data);
  used += (n + 7) & ~7;
  return out;
}
