// kvctl's entry point (bin/kvctl imports its bundle, dist/bundle/cli/main.js, or this file
// via tsx in a checkout). Start-up time matters (a `kvctl get` is benchmarked against
// `node -e 0` and etcdctl), so only what the invoked command needs is loaded:
// `serve` goes straight to the server; everything else goes through run.ts, which loads
// one command module and never yargs, chalk, ora or got unless they are used.

const argv = process.argv.slice(2);

if (argv[0] === "serve") {
  const { loadServe } = await import("./serve-bundle.ts");
  const { runServe } = await loadServe(import.meta.url);
  process.exitCode = await runServe(process.argv.slice(3));
} else {
  const { runCli } = await import("./run.ts");
  const { processIo } = await import("./io.ts");
  process.exitCode = await runCli(argv, processIo, process.env);
}
