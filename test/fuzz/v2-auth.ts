// The v2 auth mode of the differential fuzzer (v2-differential.ts, `--auth`): seeded
// sequences of /v2/auth requests (users, roles, grants and revokes of key patterns with
// `*`, password changes, root and guest, enable and disable with and without root) mixed
// with keys requests from the keys generator, each sent with or without HTTP Basic
// credentials, right or wrong, or a malformed Authorization header. Bodies are valid JSON
// most of the time, else malformed, of the wrong shape, with unknown fields or a name that
// is not the path's.
//
// Names and passwords come from small pools, so a credential is right often enough for
// auth to let requests through, and grants hit the keys generator's paths (/a, /b/c...).
import { mulberry32, type Rng } from "../helpers/prng.ts";
import type { FuzzRequest } from "./v2-raw.ts";
import { generateRequests } from "./v2-differential.ts";

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const chance = (rng: Rng, p: number): boolean => rng() < p;

const USERS = ["root", "guest", "u1", "u2", "u1", "root"];
const ODD_USERS = ["", "a%2Fb", "%zz", "r%C3%A9", "u:1", "U1", "_u"];
const ROLES = ["root", "guest", "r1", "r2", "r1"];
const ODD_ROLES = ["", "R1", "%zz", "a%2Fb", "_r"];
const PASSWORDS = ["pw", "pw", "pw", "pw2", "", "p:w"];
// No empty pattern: etcd 3.4.23 accepts one in a grant, then its handler panics matching
// any key against it (simpleMatch reads pattern[len-1]) and drops the connection of every
// request whose user holds the role (test/fuzz/README.md).
const PATTERNS = ["/a", "/a/*", "/*", "/b*", "/dir/*", "*", "/c", "/a/b", "a", "/d/*/x"];

/** A Basic credential, right or wrong, or a malformed Authorization header. */
function authorization(rng: Rng): [string, string] | undefined {
  const r = rng();
  if (r < 0.35) return undefined;
  const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
  // Half of the well-formed credentials are the start's (right unless a password changed).
  if (r < 0.6) return ["Authorization", `Basic ${b64(pick(rng, ["root:pw", "root:pw", "u1:pw"]))}`];
  if (r < 0.88) return ["Authorization", `Basic ${b64(`${pick(rng, USERS)}:${pick(rng, PASSWORDS)}`)}`];
  return ["Authorization", pick(rng, ["Basic", "Basic ", "Basic !!!", `Basic ${b64("root")}`, `Bearer x`, `basic ${b64("root:pw")}`, `Basic ${b64("nobody:pw")}`, `Basic ${b64(":pw")}`, `Basic  ${b64("root:pw")}`, `Basic ${b64("root:pw")}x`])];
}

function names(rng: Rng, pool: readonly string[]): string[] {
  const n = Math.floor(rng() * 3);
  return Array.from({ length: n }, () => pick(rng, pool));
}

function perms(rng: Rng): Record<string, unknown> {
  const kv: Record<string, unknown> = {};
  if (chance(rng, 0.8)) kv["read"] = names(rng, PATTERNS);
  if (chance(rng, 0.8)) kv["write"] = names(rng, PATTERNS);
  if (chance(rng, 0.05)) kv["read"] = "/a";
  return chance(rng, 0.05) ? { kv, other: 1 } : { kv };
}

/** A user body for PUT /v2/auth/users/<name>: create, password change, grant or revoke. */
function userBody(rng: Rng, name: string): Record<string, unknown> {
  const b: Record<string, unknown> = { user: chance(rng, 0.9) ? name : pick(rng, USERS) };
  if (chance(rng, 0.05)) delete b["user"];
  switch (Math.floor(rng() * 5)) {
    case 0:
      b["password"] = pick(rng, PASSWORDS);
      if (chance(rng, 0.5)) b["roles"] = names(rng, ROLES);
      break;
    case 1:
      b["password"] = pick(rng, PASSWORDS);
      break;
    case 2:
      b["grant"] = names(rng, ROLES);
      break;
    case 3:
      b["revoke"] = names(rng, ROLES);
      break;
    default:
      if (chance(rng, 0.5)) b["password"] = pick(rng, PASSWORDS);
      if (chance(rng, 0.5)) b["grant"] = names(rng, ROLES);
      if (chance(rng, 0.5)) b["revoke"] = names(rng, ROLES);
  }
  if (chance(rng, 0.05)) b["unknownField"] = true;
  return b;
}

/** A role body for PUT /v2/auth/roles/<name>: create, grant or revoke of patterns. */
function roleBody(rng: Rng, name: string): Record<string, unknown> {
  const b: Record<string, unknown> = { role: chance(rng, 0.9) ? name : pick(rng, ROLES) };
  if (chance(rng, 0.05)) delete b["role"];
  const r = rng();
  if (r < 0.35) b["permissions"] = perms(rng);
  else if (r < 0.65) b["grant"] = perms(rng);
  else if (r < 0.9) b["revoke"] = perms(rng);
  else {
    b["grant"] = perms(rng);
    b["revoke"] = perms(rng);
  }
  if (chance(rng, 0.05)) b["unknownField"] = "x";
  return b;
}

function jsonBody(rng: Rng, b: Record<string, unknown>): string {
  if (chance(rng, 0.08)) return pick(rng, ["", "{", "[]", "null", '"x"', "{}", '{"user":5}', '{"role":["r1"]}', '{"grant":"r1"}', '{"permissions":{"kv":{"read":"/a"}}}', JSON.stringify(b) + "x", JSON.stringify(b) + " {}"]);
  return JSON.stringify(b);
}

/** One /v2/auth request. */
function authRequest(rng: Rng): Omit<FuzzRequest, "mayBlock"> {
  const method = pick(rng, ["GET", "GET", "PUT", "PUT", "PUT", "DELETE", "POST", "HEAD", "PATCH"]);
  const headers: [string, string][] = [];
  const r = rng();
  if (r < 0.12) return { method: chance(rng, 0.7) ? pick(rng, ["PUT", "PUT", "DELETE"]) : method, target: "/v2/auth/enable", headers };
  if (r < 0.16) return { method, target: pick(rng, ["/v2/auth", "/v2/auth/", "/v2/auth/enable/x", "/v2/auth/users/", "/v2/auth/roles/", "/v2/auth/userss", "/v2/auth/users/u1/x"]), headers };
  const users = r < 0.58;
  const collection = users ? "users" : "roles";
  if (chance(rng, 0.15)) return { method: chance(rng, 0.8) ? "GET" : method, target: `/v2/auth/${collection}`, headers };
  const name = chance(rng, 0.93) ? pick(rng, users ? USERS : ROLES) : pick(rng, users ? ODD_USERS : ODD_ROLES);
  const target = `/v2/auth/${collection}/${name}`;
  if (method !== "PUT" && method !== "POST") return { method, target, headers };
  const ct = pick(rng, ["application/json", "application/json", "", "text/plain", "application/x-www-form-urlencoded"]);
  if (ct !== "") headers.push(["Content-Type", ct]);
  return { method, target, headers, body: jsonBody(rng, users ? userBody(rng, decodeURIComponent(name.replace(/%zz/g, ""))) : roleBody(rng, name)) };
}

/**
 * A seeded sequence of auth and keys requests. The first few create root (and often
 * enable auth), so the rest is not mostly "auth is off". Keys requests come from
 * `generateRequests` with a derived seed, long polls left out (a watch needing
 * credentials is an auth question, not a timing one).
 */
export function* generateAuthRequests(seed: number, count: number, index: () => number): Generator<FuzzRequest> {
  const rng = mulberry32(seed);
  const keys = generateRequests((seed ^ 0x5eed) >>> 0, Number.MAX_SAFE_INTEGER, index, { shapes: false });
  const b = (o: unknown): string => JSON.stringify(o);
  const json: [string, string][] = [["Content-Type", "application/json"]];
  const start: FuzzRequest[] = [
    { method: "PUT", target: "/v2/auth/users/root", headers: json, body: b({ user: "root", password: "pw" }), mayBlock: false },
    { method: "PUT", target: "/v2/auth/roles/r1", headers: json, body: b({ role: "r1", permissions: { kv: { read: ["/a/*", "/b"], write: ["/a/*"] } } }), mayBlock: false },
    { method: "PUT", target: "/v2/auth/users/u1", headers: json, body: b({ user: "u1", password: "pw", roles: ["r1"] }), mayBlock: false },
  ];
  if (chance(rng, 0.7)) start.push({ method: "PUT", target: "/v2/auth/enable", headers: [], mayBlock: false });
  for (let n = 0; n < count; n++) {
    if (n < start.length) {
      yield start[n]!;
      continue;
    }
    let req: Omit<FuzzRequest, "mayBlock">;
    if (chance(rng, 0.45)) {
      req = authRequest(rng);
    } else {
      let k = keys.next().value as FuzzRequest;
      while (k.mayBlock) k = keys.next().value as FuzzRequest;
      req = k;
    }
    const a = authorization(rng);
    yield { ...req, headers: a === undefined ? req.headers : [...req.headers.filter(([h]) => h !== "Authorization"), a], mayBlock: false };
  }
}
