// The auth folder's boundary: v2 users, roles, permission patterns, password hashing.
export {
  ROOT_ROLE,
  GUEST_ROLE,
  ROOT_USER,
  V2AuthStatus,
  V2AuthError,
  type V2Permissions,
  type V2UserRecord,
  type V2RoleRecord,
  type V2UserOut,
  type V2AuthOp,
  type V2AuthResult,
  type V2AuthApplied,
  type V2Principal,
} from "./v2-model.ts";
export { patternMatches, patternMatchesRecursively, permissionsAllow, permissionsEmpty, compareGoStrings } from "./v2-permissions.ts";
export { V2AuthState } from "./v2-auth-state.ts";
export type { V2AuthImage } from "./v2-image.ts";
export { hashPassword, verifyPassword, PasswordVerifier, DEFAULT_SCRYPT_COST, type ScryptCost } from "./password.ts";
