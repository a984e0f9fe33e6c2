// v2 auth for the "(auth)" rows: set up a user with a prefix role on a fresh server through
// the HTTP API, exactly as etcd 3.4 requires (shapes and statuses as recorded by the shared
// conformance suite, `run.mjs show --filter 'auth/*'`), then check that only authenticated
// requests pass. Both servers get the same requests; nothing here knows which one it talks to.
//
// Invariants: every setup step must answer 2xx (else the row fails, naming the step); a 2xx
// other than etcd's recorded status is kept as a note, not an error (the figures are still
// valid); the check after setup must see 401 without credentials and 2xx with them, or the
// row fails (a benchmark of requests that all answer 401 would measure the wrong path).
import { basicAuth, httpRequest, putKey, VALUE64 } from "./http.ts";

/** Who the bench authenticates as. The role covers every key the auth rows touch (all start with "bench"). */
export const BENCH_AUTH = {
  rootPassword: "bench-root-pw",
  user: "bencher",
  password: "bench-pw",
  role: "bench",
  /** etcd's simpleMatch: a trailing `*` is a prefix match on the key path ("/bench-get/k" matches). */
  pattern: "/bench*",
} as const;

/** The key the auth GET row reads (as lib/wrk/v2-get-auth.lua) and the setup pre-populates with credentials. */
export const AUTH_GET_KEY = "bench-get/k";
/** Written without credentials by the check; must be refused (401). */
export const AUTH_CHECK_KEY = "bench-auth-check/k";

export interface AuthSetupStep {
  readonly what: string;
  readonly method: "PUT";
  readonly path: string;
  /** JSON body; undefined = no body (PUT /v2/auth/enable). */
  readonly json?: unknown;
  /** Sent with root's Basic credentials (needed once auth is enabled). */
  readonly asRoot: boolean;
  /** What etcd 3.4 answers on a fresh server (conformance recording). */
  readonly etcdStatus: number;
}

/**
 * The setup requests, in order. etcd answers 201 when it creates a user or role, but 200
 * when the create carries roles (users-roles:users-crud step 5), 200 for enable, and 200
 * for the guest revoke; the guest role exists only after the first enable, so the revoke
 * comes last and needs root (admin endpoints need root once auth is on).
 */
export function authSetupSteps(a: typeof BENCH_AUTH = BENCH_AUTH): AuthSetupStep[] {
  return [
    { what: "create root", method: "PUT", path: "/v2/auth/users/root", json: { user: "root", password: a.rootPassword }, asRoot: false, etcdStatus: 201 },
    {
      what: `create role ${a.role}`, method: "PUT", path: `/v2/auth/roles/${a.role}`,
      json: { role: a.role, permissions: { kv: { read: [a.pattern], write: [a.pattern] } } }, asRoot: false, etcdStatus: 201,
    },
    {
      what: `create user ${a.user}`, method: "PUT", path: `/v2/auth/users/${a.user}`,
      json: { user: a.user, password: a.password, roles: [a.role] }, asRoot: false, etcdStatus: 200,
    },
    { what: "enable auth", method: "PUT", path: "/v2/auth/enable", asRoot: false, etcdStatus: 200 },
    {
      what: "revoke guest read/write", method: "PUT", path: "/v2/auth/roles/guest",
      json: { role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } }, asRoot: true, etcdStatus: 200,
    },
  ];
}

/** Statuses seen after setup; `ok` = refused without credentials, served with them. */
export interface AuthCheck {
  readonly get_without_credentials: number;
  readonly put_without_credentials: number;
  readonly get_as_user: number;
  readonly ok: boolean;
  /** Setup answers that were 2xx but not etcd's status (e.g. "201 to create user bencher, etcd 200"). */
  readonly notes: readonly string[];
}

const is2xx = (status: number): boolean => status >= 200 && status <= 299;

/** Run the setup steps; rejects at the first non-2xx answer. Resolves with the notes (2xx differing from etcd). */
export async function setupAuth(url: string, a: typeof BENCH_AUTH = BENCH_AUTH): Promise<string[]> {
  const root = basicAuth("root", a.rootPassword);
  const notes: string[] = [];
  for (const step of authSetupSteps(a)) {
    const r = await httpRequest(`${url}${step.path}`, {
      method: step.method,
      ...(step.json === undefined ? {} : { json: step.json }),
      ...(step.asRoot ? { authorization: root } : {}),
    });
    if (!is2xx(r.status)) {
      throw new Error(`Cannot set up auth: ${step.what} (${step.method} ${step.path}) answered ${r.status} ${r.body.trim().slice(0, 120)}`);
    }
    if (r.status !== step.etcdStatus) notes.push(`${r.status} to ${step.what}, etcd ${step.etcdStatus}`);
  }
  return notes;
}

/** GET and PUT without credentials (expect 401), GET as the user (expect 2xx). */
export async function checkAuth(url: string, a: typeof BENCH_AUTH = BENCH_AUTH): Promise<Omit<AuthCheck, "notes">> {
  const getAnon = (await httpRequest(`${url}/v2/keys/${AUTH_GET_KEY}`)).status;
  const putAnon = await putKey(url, AUTH_CHECK_KEY, VALUE64);
  const getUser = (await httpRequest(`${url}/v2/keys/${AUTH_GET_KEY}`, { authorization: basicAuth(a.user, a.password) })).status;
  return {
    get_without_credentials: getAnon,
    put_without_credentials: putAnon,
    get_as_user: getUser,
    ok: getAnon === 401 && putAnon === 401 && is2xx(getUser),
  };
}

/**
 * Everything an auth row needs on a fresh server: setup, the GET key written with the
 * user's credentials, and the check. Rejects when the check fails (the row is then reported
 * as failed, not measured).
 */
export async function prepareAuth(url: string, a: typeof BENCH_AUTH = BENCH_AUTH): Promise<AuthCheck> {
  const notes = await setupAuth(url, a);
  const st = await putKey(url, AUTH_GET_KEY, VALUE64, basicAuth(a.user, a.password));
  if (!is2xx(st)) throw new Error(`Cannot prepare ${AUTH_GET_KEY} as ${a.user}: HTTP ${st}`);
  const check = { ...(await checkAuth(url, a)), notes };
  if (!check.ok) throw new Error(`auth setup check failed: ${authCheckText(check)}`);
  return check;
}

/** One line for the log: "without credentials GET 401, PUT 401; as bencher GET 200: ok". */
export function authCheckText(c: Omit<AuthCheck, "notes"> & { readonly notes?: readonly string[] }, user: string = BENCH_AUTH.user): string {
  const notes = c.notes !== undefined && c.notes.length > 0 ? ` (differs from etcd: ${c.notes.join("; ")})` : "";
  return `without credentials GET ${c.get_without_credentials}, PUT ${c.put_without_credentials}; ` +
    `as ${user} GET ${c.get_as_user}: ${c.ok ? "ok" : "WRONG (want 401, 401, 2xx)"}${notes}`;
}

/** The `user:password` argument the auth Lua scripts turn into their Authorization header. */
export function wrkCredentials(a: typeof BENCH_AUTH = BENCH_AUTH): string {
  return `${a.user}:${a.password}`;
}
