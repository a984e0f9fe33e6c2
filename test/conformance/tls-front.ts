// Runs `kvctl serve` with its client port on HTTPS, behind a plain-TCP front door, so the
// shared conformance runner (which speaks plain HTTP) replays its whole corpus over TLS:
// every request the runner sends reaches kvctl inside a TLS connection, byte for byte.
// The runner starts one of these per fresh server, so the certificates (for 127.0.0.1) are
// made once by the test that starts the runner, and given here as files.
//
//   node --import tsx test/conformance/tls-front.ts <frontPort> <peerPort> <dataDir> <name> <caFile> <certFile> <keyFile>
//
// The member advertises the front door's http URL, which is what the runner (and the
// recorded etcd answers) see in /v2/members and /v2/machines.
import net from "node:net";
import tls from "node:tls";
import { readFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { freePort, kvctlBin, repoRoot } from "../helpers/server.ts";

const [frontPort, peerPort, dataDir, name, caFile, certFile, keyFile] = process.argv.slice(2) as [string, string, string, string, string, string, string];
const ca = readFileSync(caFile);
const tlsPort = await freePort();

const child = spawn(
  process.execPath,
  [
    kvctlBin, "serve", "--name", name, "--data-dir", dataDir,
    "--listen-client-urls", `https://127.0.0.1:${tlsPort}`, "--advertise-client-urls", `http://127.0.0.1:${frontPort}`,
    "--listen-peer-urls", `http://127.0.0.1:${peerPort}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peerPort}`,
    "--initial-cluster", `${name}=http://127.0.0.1:${peerPort}`,
    "--cert-file", certFile, "--key-file", keyFile, "--log-level", "warn",
  ],
  { cwd: repoRoot, stdio: "inherit" },
);

const front = net.createServer((plain) => {
  // No server name: the certificate lists only the IP, and the server must cope without SNI.
  const secure = tls.connect({ host: "127.0.0.1", port: tlsPort, ca });
  plain.pipe(secure).pipe(plain);
  const close = (): void => {
    plain.destroy();
    secure.destroy();
  };
  plain.on("error", close);
  secure.on("error", close);
  plain.on("close", close);
  secure.on("close", close);
});
front.listen(Number(frontPort), "127.0.0.1");

const stop = (): void => {
  front.close();
  child.kill("SIGTERM");
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
child.on("exit", (code) => process.exit(code ?? 0));
