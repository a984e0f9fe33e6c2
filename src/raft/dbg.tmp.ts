import { SimCluster } from "./sim-network.test-helper.ts";
const seed = 843, k = seed % 8;
const c = new SimCluster({ seed, size: 3, steps: 800, preVote: (k & 1) === 1, checkQuorum: (k & 2) === 2, drop: (k & 4) === 4 ? 0.1 : 0.02, duplicate: 0.05, maxDelay: 4 });
const oc = c.crash.bind(c), orr = c.restart.bind(c);
c.crash = (n) => { console.log(c.now, "crash", n.id, "storage last", n.storage.lastIndex(), "snap", n.storage.snapshot().metadata.index, JSON.stringify(n.storage.initialState())); oc(n); };
c.restart = (n) => { console.log(c.now, "restart", n.id, "storage last", n.storage.lastIndex()); orr(n); };
try { for (let i = 0; i < 800; i++) c.step(); c.healAndConverge(600); } catch (e) { console.log(String(e)); }
