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
export { hashPassword, hashV3Password, verifyPassword, PasswordVerifier, DEFAULT_SCRYPT_COST, BCRYPT_MIN_COST, BCRYPT_MAX_COST, scryptCostForBcrypt, type ScryptCost } from "./password.ts";
export { setBcryptWarn, type BcryptWarn } from "./bcrypt.ts";
// v3: users, roles with key-range permissions, simple tokens (see README "v3").
export {
  V3_ROOT_USER,
  V3_ROOT_ROLE,
  V3PermType,
  authOldRevision,
  noPasswordUser,
  encodePermission,
  decodePermission,
  parseV3AuthOp,
  type V3PermTypeValue,
  type V3Permission,
  type V3PermissionWire,
  type V3User,
  type V3Role,
  type V3AuthInfo,
  type V3AuthOp,
  type V3AuthOpKind,
  type V3AuthResults,
  type V3AuthResult,
  type V3Done,
} from "./v3-model.ts";
export { V3AuthState, type V3ApplyContext, type V3AuthStateOptions } from "./v3-auth-state.ts";
export { V3JwtTokens, JWT_SIGN_METHODS, jwtVerifyOnly, type V3JwtOptions } from "./v3-jwt.ts";
export { V3SimpleTokens, DEFAULT_SIMPLE_TOKEN_TTL_MS, formatSimpleToken, simpleTokenIndex } from "./v3-tokens.ts";
export {
  checkRangeRequest,
  checkPutRequest,
  checkDeleteRangeRequest,
  checkTxnRequest,
  checkLeaseKeys,
  rangePermitted,
  unifyPermissions,
  type V3PermissionChecker,
  type V3Interval,
  type V3UnifiedPermissions,
  type V3RangeShape,
  type V3PutShape,
  type V3DeleteRangeShape,
  type V3RequestOpShape,
  type V3TxnShape,
} from "./v3-permissions.ts";
export { checkV3Password, authenticateOp, newSimpleTokenPrefix, type V3PasswordCheckOptions } from "./v3-authenticate.ts";
export { parseV3AuthImage, type V3AuthImage } from "./v3-image.ts";
