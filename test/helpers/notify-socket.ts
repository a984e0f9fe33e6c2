// A stand-in for systemd's notification socket: a Unix datagram socket bound by perl (node
// cannot bind one) that reports the first datagram it receives.
import { spawn, spawnSync } from "node:child_process";

export const hasPerlSocket = spawnSync("perl", ["-MSocket", "-e", "1"]).status === 0;

export interface NotifySocket {
  /** Resolves once the socket is bound at the path. */
  bound: Promise<void>;
  /** The first datagram (the receiver then exits). */
  message: Promise<string>;
  close(): void;
}

export function notifySocket(path: string): NotifySocket {
  const script = `use Socket; $| = 1; socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die "socket: $!"; bind($s, pack_sockaddr_un($ARGV[0])) or die "bind: $!"; print "bound\\n"; recv($s, my $buf, 4096, 0); print $buf;`;
  const p = spawn("perl", ["-e", script, path], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  let onBound: () => void = () => {};
  const bound = new Promise<void>((r) => (onBound = r));
  p.stdout.on("data", (c: Buffer) => {
    out += c.toString();
    if (out.startsWith("bound\n")) onBound();
  });
  const message = new Promise<string>((resolve) => p.once("exit", () => resolve(out.slice("bound\n".length))));
  return { bound, message, close: () => void p.kill("SIGKILL") };
}

/** The message, or a rejection naming `what` after `ms`. */
export function withinMs<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(what())), ms)));
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
