// Runs `kvctl serve` with its client port on HTTPS, behind a plain-TCP front door, so the
// shared conformance runner (which speaks plain HTTP) replays its whole corpus over TLS:
// every request the runner sends reaches kvctl inside a TLS connection, byte for byte.
// Certificates are generated here, at run time, for 127.0.0.1.
//
//   node --import tsx test/conformance/tls-front.ts <frontPort> <peerPort> <dataDir> <name>
//
// The member advertises the front door's http URL, which is what the runner (and the
// recorded etcd answers) see in /v2/members and /v2/machines.
import net from "node:net";
import tls from "node:tls";
import { spawn } from "node:child_process";
import { CertDir } from "../helpers/certs.ts";
import { freePort, kvctlBin, repoRoot } from "../helpers/server.ts";

const [frontPort, peerPort, dataDir, name] = process.argv.slice(2) as [string, string, string, string];
const certs = new CertDir("kvctl-conf-tls-");
const server = certs.server("server", ["127.0.0.1"]);
const tlsPort = await freePort();

const child = spawn(
  process.execPath,
  [
    kvctlBin, "serve", "--name", name, "--data-dir", dataDir,
    "--listen-client-urls", `https://127.0.0.1:${tlsPort}`, "--advertise-client-urls", `http://127.0.0.1:${frontPort}`,
    "--listen-peer-urls", `http://127.0.0.1:${peerPort}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peerPort}`,
    "--initial-cluster", `${name}=http://127.0.0.1:${peerPort}`,
    "--cert-file", server.cert, "--key-file", server.key, "--log-level", "warn",
  ],
  { cwd: repoRoot, stdio: "inherit" },
);

const front = net.createServer((plain) => {
  // No server name: the certificate lists only the IP, and the server must cope without SNI.
  const secure = tls.connect({ host: "127.0.0.1", port: tlsPort, ca: certs.ca.pem.certPem });
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
child.on("exit", (code) => {
  certs.remove();
  process.exit(code ?? 0);
});
