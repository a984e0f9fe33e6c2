// sorted-btree is CommonJS with the class on `exports.default`. Imported from ESM (our
// build, tsx in this package) the default import is the whole module; loaded as CommonJS
// (tsx outside a "type": "module" package) interop hands over the class itself. Accept both.

import BTreeModule from "sorted-btree";

type BTreeClass = typeof BTreeModule.default;
const loaded = BTreeModule as unknown as BTreeClass | { default: BTreeClass };

export const BTree: BTreeClass = "default" in loaded ? loaded.default : loaded;
export type BTree<K, V> = InstanceType<typeof BTreeModule.default<K, V>>;
