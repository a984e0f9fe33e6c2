import { test } from "node:test";
import assert from "node:assert/strict";
import { V2AuthState } from "./v2-auth-state.ts";
import type { V2AuthApplied, V2AuthOp, V2AuthResult } from "./v2-model.ts";
import { mulberry32 } from "../prng.test-helper.ts";

function errorOf(a: V2AuthApplied): { status: number; message: string } {
  assert.equal(a.result.ok, false, `expected a failure, got ${JSON.stringify(a.result)}`);
  const r = a.result as Extract<V2AuthResult, { ok: false }>;
  return { status: r.error.status, message: r.error.message };
}

function okOf(a: V2AuthApplied): Extract<V2AuthResult, { ok: true }> {
  assert.equal(a.result.ok, true, `expected success, got ${JSON.stringify(a.result)}`);
  return a.result as Extract<V2AuthResult, { ok: true }>;
}

const createUser = (user: string, passwordHash: string | null = "h-" + user): V2AuthOp => ({ kind: "createOrUpdateUser", user, passwordHash, roles: null });

/** A state with user root and auth enabled (guest created). */
function enabledState(): V2AuthState {
  const s = new V2AuthState();
  okOf(s.apply(createUser("root")));
  okOf(s.apply({ kind: "enable" }));
  return s;
}

test("the first auth write spends etcd's four directory indexes plus its own", () => {
  const s = new V2AuthState();
  const a = s.apply(createUser("alice"));
  assert.deepEqual(okOf(a), { ok: true, kind: "user", user: { user: "alice", roles: null }, created: true });
  assert.equal(a.consumedIndexes, 5);
  assert.equal(s.apply(createUser("bob")).consumedIndexes, 1);
});

test("createOrUpdateUser updates the password of an existing user with 200 and roles []", () => {
  const s = new V2AuthState();
  s.apply(createUser("alice"));
  const a = s.apply({ kind: "createOrUpdateUser", user: "alice", passwordHash: "h2", roles: null });
  assert.deepEqual(okOf(a), { ok: true, kind: "user", user: { user: "alice", roles: [] }, created: false });
  assert.equal(a.consumedIndexes, 1);
  assert.equal(s.passwordHash("alice"), "h2");
});

test("createOrUpdateUser without a password is 400 'not updated' once roles are [] (etcd's DeepEqual)", () => {
  const s = new V2AuthState();
  s.apply(createUser("alice"));
  // stored roles null -> [] counts as a change, exactly as etcd's reflect.DeepEqual sees it
  assert.deepEqual(okOf(s.apply({ kind: "createOrUpdateUser", user: "alice", passwordHash: null, roles: null })).kind, "user");
  const a = s.apply({ kind: "createOrUpdateUser", user: "alice", passwordHash: null, roles: null });
  assert.deepEqual(errorOf(a), { status: 400, message: "auth: User not updated. Use grant/revoke/password to update the user." });
  assert.equal(a.consumedIndexes, 0);
});

test("creating a user without a password is 400 and spends nothing", () => {
  const s = new V2AuthState();
  const a = s.apply(createUser("x", null));
  assert.deepEqual(errorOf(a), { status: 400, message: "auth: Cannot create user x with an empty password" });
  assert.equal(a.consumedIndexes, 0);
  assert.equal(s.getUser("x"), undefined);
});

test("createUser with roles answers 200 (not 201) and 409 when the user exists", () => {
  const s = new V2AuthState();
  const a = s.apply({ kind: "createUser", user: "bob", passwordHash: "h", roles: ["guest", "b", "a"] });
  assert.deepEqual(okOf(a), { ok: true, kind: "user", user: { user: "bob", roles: ["guest", "b", "a"] }, created: false });
  const again = s.apply({ kind: "createUser", user: "bob", passwordHash: "h", roles: ["guest"] });
  assert.deepEqual(errorOf(again), { status: 409, message: "auth: User bob already exists." });
  assert.equal(again.consumedIndexes, 0);
});

test("the root user always holds the root role, even after revoking it", () => {
  const s = new V2AuthState();
  assert.deepEqual(okOf(s.apply(createUser("root"))), { ok: true, kind: "user", user: { user: "root", roles: ["root"] }, created: true });
  okOf(s.apply({ kind: "updateUser", user: "root", passwordHash: null, grant: ["x"], revoke: ["root"] }));
  assert.deepEqual(s.getUser("root")?.roles, ["x", "root"]);
  assert.equal(s.isRoot("root"), true);
});

test("updateUser grants and revokes roles, sorted, with etcd's 404 and 409 messages", () => {
  const s = new V2AuthState();
  s.apply(createUser("eve"));
  assert.deepEqual(okOf(s.apply({ kind: "updateUser", user: "eve", passwordHash: null, grant: ["r2", "r1"], revoke: null })), {
    ok: true,
    kind: "user",
    user: { user: "eve", roles: ["r1", "r2"] },
    created: false,
  });
  assert.deepEqual(errorOf(s.apply({ kind: "updateUser", user: "eve", passwordHash: null, grant: ["r1"], revoke: null })), {
    status: 409,
    message: "auth: Granting duplicate role r1 for user eve",
  });
  assert.deepEqual(errorOf(s.apply({ kind: "updateUser", user: "eve", passwordHash: null, grant: null, revoke: ["r3"] })), {
    status: 409,
    message: "auth: Revoking ungranted role r3 for user eve",
  });
  assert.deepEqual(errorOf(s.apply({ kind: "updateUser", user: "nobody", passwordHash: null, grant: ["a"], revoke: null })), {
    status: 404,
    message: "auth: User nobody does not exist.",
  });
  assert.deepEqual(s.getUser("eve")?.roles, ["r1", "r2"]);
});

test("deleteUser: 404 without a final period, 403 for root while enabled", () => {
  const fresh = new V2AuthState();
  const miss = fresh.apply({ kind: "deleteUser", user: "a" });
  assert.deepEqual(errorOf(miss), { status: 404, message: "auth: User a does not exist" });
  assert.equal(miss.consumedIndexes, 4, "etcd creates its auth directories before the delete fails");
  const s = enabledState();
  assert.deepEqual(errorOf(s.apply({ kind: "deleteUser", user: "root" })), { status: 403, message: "auth: Cannot delete root user while auth is enabled." });
  s.apply(createUser("u"));
  const del = s.apply({ kind: "deleteUser", user: "u" });
  assert.equal(okOf(del).kind, "done");
  assert.equal(del.consumedIndexes, 1);
});

test("roles: create echoes the body, root is 403, duplicates 409", () => {
  const s = new V2AuthState();
  const a = s.apply({ kind: "createRole", role: { role: "reader", permissions: { read: ["/z", "/a"], write: [] } } });
  assert.deepEqual(okOf(a), { ok: true, kind: "role", role: { role: "reader", permissions: { read: ["/z", "/a"], write: [] } }, created: true });
  assert.equal(a.consumedIndexes, 5);
  assert.deepEqual(errorOf(s.apply({ kind: "createRole", role: { role: "reader", permissions: { read: null, write: null } } })), {
    status: 409,
    message: "auth: Role reader already exists.",
  });
  for (const op of [
    { kind: "createRole", role: { role: "root", permissions: { read: null, write: null } } },
    { kind: "updateRole", role: "root", grant: { read: ["/b"], write: null }, revoke: null },
    { kind: "deleteRole", role: "root" },
  ] as V2AuthOp[]) {
    const r = s.apply(op);
    assert.deepEqual(errorOf(r), { status: 403, message: "auth: Cannot modify role root: is root role." });
    assert.equal(r.consumedIndexes, 0);
  }
  assert.deepEqual(s.roleNames(), ["reader", "root"]);
});

test("updateRole: grant/revoke sort the lists; an update that changes nothing is 400", () => {
  const s = new V2AuthState();
  s.apply({ kind: "createRole", role: { role: "r", permissions: { read: ["/data/*"], write: [] } } });
  assert.deepEqual(okOf(s.apply({ kind: "updateRole", role: "r", grant: { read: ["/other"], write: ["/data/*"] }, revoke: null })), {
    ok: true,
    kind: "role",
    role: { role: "r", permissions: { read: ["/data/*", "/other"], write: ["/data/*"] } },
    created: false,
  });
  assert.deepEqual(errorOf(s.apply({ kind: "updateRole", role: "r", grant: { read: ["/other"], write: null }, revoke: null })), {
    status: 409,
    message: "auth: Granting duplicate read permission /other",
  });
  okOf(s.apply({ kind: "updateRole", role: "r", grant: null, revoke: { read: null, write: ["/data/*"] } }));
  assert.deepEqual(errorOf(s.apply({ kind: "updateRole", role: "r", grant: null, revoke: { read: null, write: ["/never"] } })), {
    status: 400,
    message: "auth: Role not updated. Use grant/revoke to update the role.",
  });
  assert.deepEqual(errorOf(s.apply({ kind: "updateRole", role: "zz", grant: { read: ["/b"], write: null }, revoke: null })), {
    status: 404,
    message: "auth: Role zz does not exist.",
  });
});

test("a role created with an empty grant keeps it until an update, which then always changes it", () => {
  const s = new V2AuthState();
  s.apply({ kind: "createRole", role: { role: "g", permissions: { read: null, write: null }, grant: { read: [], write: null } } });
  assert.deepEqual(s.getRole("g"), { role: "g", permissions: { read: null, write: null }, grant: { read: [], write: null } });
  const r = okOf(s.apply({ kind: "updateRole", role: "g", grant: null, revoke: { read: ["/x"], write: null } }));
  assert.deepEqual(r, { ok: true, kind: "role", role: { role: "g", permissions: { read: [], write: [] } }, created: false });
});

test("deleteRole: 404 says doesn't, a deleted role no longer grants", () => {
  const s = new V2AuthState();
  assert.deepEqual(errorOf(s.apply({ kind: "deleteRole", role: "x" })), { status: 404, message: "auth: Role x doesn't exist." });
  s.apply({ kind: "createRole", role: { role: "x", permissions: { read: ["/*"], write: null } } });
  assert.equal(okOf(s.apply({ kind: "deleteRole", role: "x" })).kind, "done");
  assert.equal(s.getRole("x"), undefined);
});

test("enable needs a root user (409 as etcd), creates guest once, and refuses twice", () => {
  const s = new V2AuthState();
  assert.deepEqual(errorOf(s.apply({ kind: "enable" })), { status: 409, message: "auth: No root user available, please create one" });
  assert.deepEqual(errorOf(s.apply({ kind: "disable" })), { status: 409, message: "auth: already disabled" });
  s.apply(createUser("root"));
  const en = s.apply({ kind: "enable" });
  assert.equal(okOf(en).kind, "done");
  assert.equal(en.consumedIndexes, 2, "guest role + enabled flag");
  assert.deepEqual(s.getRole("guest"), { role: "guest", permissions: { read: ["/*"], write: ["/*"] } });
  assert.deepEqual(errorOf(s.apply({ kind: "enable" })), { status: 409, message: "auth: already enabled" });
  assert.equal(s.apply({ kind: "disable" }).consumedIndexes, 1);
  assert.equal(s.enabled, false);
  assert.equal(s.apply({ kind: "enable" }).consumedIndexes, 1, "guest exists already");
});

interface AccessCase {
  name: string;
  setup: (s: V2AuthState) => void;
  who: { kind: "guest" } | { kind: "user"; name: string };
  key: string;
  write: boolean;
  recursive: boolean;
  want: boolean;
}

const reader = (s: V2AuthState): void => {
  s.apply({ kind: "createRole", role: { role: "reader", permissions: { read: ["/data/*"], write: null } } });
  s.apply({ kind: "createRole", role: { role: "writer", permissions: { read: null, write: ["/data/w"] } } });
  s.apply({ kind: "createUser", user: "u", passwordHash: "h", roles: ["reader", "writer", "ghost"] });
};

const accessCases: AccessCase[] = [
  { name: "guest reads with the default guest role", setup: () => {}, who: { kind: "guest" }, key: "/a", write: false, recursive: false, want: true },
  { name: "guest writes with the default guest role", setup: () => {}, who: { kind: "guest" }, key: "/a", write: true, recursive: false, want: true },
  {
    name: "guest writes after write is revoked",
    setup: (s) => s.apply({ kind: "updateRole", role: "guest", grant: null, revoke: { read: null, write: ["/*"] } }),
    who: { kind: "guest" },
    key: "/a",
    write: true,
    recursive: false,
    want: false,
  },
  { name: "guest after the guest role is deleted", setup: (s) => s.apply({ kind: "deleteRole", role: "guest" }), who: { kind: "guest" }, key: "/a", write: false, recursive: false, want: false },
  {
    name: "guest recursive read with an exact pattern (guest ignores recursive)",
    setup: (s) => {
      s.apply({ kind: "updateRole", role: "guest", grant: { read: ["/dir"], write: null }, revoke: { read: ["/*"], write: ["/*"] } });
    },
    who: { kind: "guest" },
    key: "/dir",
    write: false,
    recursive: true,
    want: true,
  },
  { name: "root user writes anywhere", setup: () => {}, who: { kind: "user", name: "root" }, key: "/x/y", write: true, recursive: true, want: true },
  { name: "unknown user", setup: () => {}, who: { kind: "user", name: "nobody" }, key: "/a", write: false, recursive: false, want: false },
  { name: "user reads through one of its roles", setup: reader, who: { kind: "user", name: "u" }, key: "/data/a", write: false, recursive: false, want: true },
  { name: "user writes through another of its roles", setup: reader, who: { kind: "user", name: "u" }, key: "/data/w", write: true, recursive: false, want: true },
  { name: "user cannot write where only read is granted", setup: reader, who: { kind: "user", name: "u" }, key: "/data/a", write: true, recursive: false, want: false },
  { name: "user recursive write with an exact pattern", setup: reader, who: { kind: "user", name: "u" }, key: "/data/w", write: true, recursive: true, want: false },
  { name: "user recursive read with a * pattern", setup: reader, who: { kind: "user", name: "u" }, key: "/data/x", write: false, recursive: true, want: true },
  { name: "user outside every pattern", setup: reader, who: { kind: "user", name: "u" }, key: "/other", write: false, recursive: false, want: false },
];

for (const c of accessCases) {
  test(`canAccess is ${c.want} for ${c.name}`, () => {
    const s = enabledState();
    c.setup(s);
    assert.equal(s.canAccess(c.who, c.key, { write: c.write, recursive: c.recursive }), c.want);
    assert.equal((c.write ? s.canWrite : s.canRead).call(s, c.who, c.key, { recursive: c.recursive }), c.want);
  });
}

test("canAccess allows everything while auth is disabled", () => {
  const s = new V2AuthState();
  assert.equal(s.canAccess({ kind: "user", name: "nobody" }, "/a", { write: true, recursive: true }), true);
});

test("save and recover round-trip the whole state, and recovery works in place", () => {
  const s = enabledState();
  reader(s);
  s.apply({ kind: "createRole", role: { role: "g", permissions: { read: null, write: null }, revoke: { read: [], write: null } } });
  const image = JSON.parse(JSON.stringify(s.save())) as unknown;
  const r = V2AuthState.recover(image);
  assert.deepEqual(r.save(), s.save());
  assert.equal(r.enabled, true);
  assert.equal(r.apply(createUser("new")).consumedIndexes, 1, "initialized survives the snapshot");
  const target = new V2AuthState();
  target.recovery(image);
  assert.deepEqual(target.save(), s.save());
});

const badImages: Array<[string, unknown]> = [
  ["a non-object", 3],
  ["an unknown version", { version: 2, enabled: false, initialized: false, users: [], roles: [] }],
  ["a stored root role", { version: 1, enabled: false, initialized: true, users: [], roles: [{ role: "root", permissions: { read: null, write: null } }] }],
  ["enabled without root", { version: 1, enabled: true, initialized: true, users: [], roles: [] }],
  ["a user without a password", { version: 1, enabled: false, initialized: true, users: [{ user: "a", roles: null }], roles: [] }],
  ["a duplicate user", { version: 1, enabled: false, initialized: true, users: [{ user: "a", password: "h", roles: null }, { user: "a", password: "h", roles: null }], roles: [] }],
  ["roles that are not strings", { version: 1, enabled: false, initialized: true, users: [{ user: "a", password: "h", roles: [1] }], roles: [] }],
];

for (const [name, image] of badImages) {
  test(`recover rejects an image with ${name}`, () => {
    assert.throws(() => V2AuthState.recover(image), /Cannot recover auth state/);
  });
}

test("applying the same random op sequence gives the same state on two members", () => {
  const seed = Number(process.env["AUTH_SEED"] ?? Date.now() % 100000);
  const rand = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const names = ["root", "a", "b", "guest", "r1"];
  const pats = ["/*", "/a", "/a/*", "*", ""];
  const list = (): string[] | null => (rand() < 0.2 ? null : Array.from({ length: Math.floor(rand() * 3) }, () => pick(pats)));
  const perms = () => ({ read: list(), write: list() });
  const ops: V2AuthOp[] = [];
  for (let i = 0; i < 500; i++) {
    ops.push(
      pick<() => V2AuthOp>([
        () => ({ kind: "createOrUpdateUser", user: pick(names), passwordHash: rand() < 0.3 ? null : `h${i}`, roles: rand() < 0.5 ? null : [] }),
        () => ({ kind: "createUser", user: pick(names), passwordHash: `h${i}`, roles: [pick(names)] }),
        () => ({ kind: "updateUser", user: pick(names), passwordHash: null, grant: rand() < 0.5 ? [pick(names)] : null, revoke: rand() < 0.5 ? [pick(names)] : null }),
        () => ({ kind: "deleteUser", user: pick(names) }),
        () => ({ kind: "createRole", role: { role: pick(names), permissions: perms() } }),
        () => ({ kind: "updateRole", role: pick(names), grant: rand() < 0.5 ? perms() : null, revoke: rand() < 0.5 ? perms() : null }),
        () => ({ kind: "deleteRole", role: pick(names) }),
        () => ({ kind: "enable" }),
        () => ({ kind: "disable" }),
      ])(),
    );
  }
  const m1 = new V2AuthState();
  const m2 = new V2AuthState();
  let consumed1 = 0;
  let consumed2 = 0;
  for (const op of ops) {
    consumed1 += m1.apply(JSON.parse(JSON.stringify(op)) as V2AuthOp).consumedIndexes;
    consumed2 += m2.apply(JSON.parse(JSON.stringify(op)) as V2AuthOp).consumedIndexes;
  }
  assert.deepEqual(m1.save(), m2.save(), `seed ${seed}`);
  assert.equal(consumed1, consumed2, `seed ${seed}`);
  // and a member recovered from a snapshot half-way ends in the same state
  const m3 = new V2AuthState();
  ops.slice(0, 250).forEach((op) => m3.apply(op));
  const m4 = V2AuthState.recover(JSON.parse(JSON.stringify(m3.save())));
  ops.slice(250).forEach((op) => m4.apply(op));
  assert.deepEqual(m4.save(), m1.save(), `seed ${seed}`);
});

test("listings leave out users and roles whose names begin with _ (hidden in etcd's v2 store), which still exist", () => {
  const s = new V2AuthState();
  okOf(s.apply(createUser("_u")));
  okOf(s.apply(createUser("u2")));
  okOf(s.apply({ kind: "createRole", role: { role: "_r", permissions: { read: null, write: null } } }));
  assert.deepEqual(s.listedUserNames(), ["u2"]);
  assert.deepEqual(s.listedRoleNames(), ["root"]);
  assert.equal(s.getUser("_u")?.user, "_u");
  assert.equal(s.getRole("_r")?.role, "_r");
});
