// Versions reported by /version. kvctl implements etcd 3.4's v2 API level, and says so in the
// fields clients branch on; its own version is in a field of its own. The cluster version is
// not a constant: the leader records it through the log (cluster-version.ts).
import { createRequire } from "node:module";

export const ETCD_SERVER_VERSION = "3.4.23";

function readOwnVersion(): string {
  try {
    const require = createRequire(import.meta.url);
    for (const p of ["../../package.json", "../../../package.json"]) {
      try {
        return (require(p) as { version: string }).version;
      } catch {
        // try the next layout (src/ vs dist/)
      }
    }
  } catch {
    // fall through
  }
  return "0.0.0";
}

export const KVCTL_VERSION = readOwnVersion();
