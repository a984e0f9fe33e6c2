// Runs a share of the pure unit test files (scripts/pure-tests.txt) in one process, as
// scripts/test.sh asks: a stub per share imports this and calls runInProcess with its files.
// Starting node with tsx and loading the modules under test once per share instead of once
// per file is most of what the in-process run saves (about a third of the CPU of one process
// per file), so the files share a process and must not reach outside it. Anything that
// would let a file disturb its neighbours or be disturbed by them is refused here, so a
// file that starts to need a socket or a process fails in CI with the way out named,
// instead of flaking: listening, connecting, binding a UDP socket, starting a process.
// Real timers are not refused (modules under test set their own); the list's rule keeps
// timing tests out of it.
import childProcess from "node:child_process";
import dgram from "node:dgram";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

export class ImpureTestError extends Error {
  code = "ERR_IMPURE_TEST";
  constructor(what) {
    super(
      `${what} in a file of scripts/pure-tests.txt: those run several to a process beside ` +
        "each other; take the file off that list to run it in its own process, serially",
    );
    this.name = "ImpureTestError";
  }
}

function refuse(owner, name, what) {
  owner[name] = function refused() {
    throw new ImpureTestError(what);
  };
}

/** Imports each file in turn (registering its tests); a file that does not load fails as a test of its own. */
export async function runInProcess(files) {
  refuse(net.Server.prototype, "listen", "listening on a socket");
  refuse(net.Socket.prototype, "connect", "opening a connection");
  refuse(dgram.Socket.prototype, "bind", "binding a UDP socket");
  for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
    refuse(childProcess, name, `child_process.${name}`);
  }
  // `import { spawn } from "node:child_process"` reads the ESM view of the module.
  syncBuiltinESMExports();
  for (const file of files) {
    try {
      await import(pathToFileURL(file).href);
    } catch (err) {
      test(`${file} loads`, () => {
        throw err;
      });
    }
  }
}
