// v2 key-space wire shapes (JSON as etcd 3.4 renders it). Field order matters only for
// byte-compatibility with etcd's output, which some scripts diff: keep etcd's order.

/** A node as rendered on the wire. */
export interface V2NodeJSON {
  key?: string;
  dir?: true;
  value?: string;
  nodes?: V2NodeJSON[];
  expiration?: string;
  ttl?: number;
  modifiedIndex?: number;
  createdIndex?: number;
}

export type V2Action =
  | "get"
  | "set"
  | "update"
  | "create"
  | "delete"
  | "compareAndSwap"
  | "compareAndDelete"
  | "expire";

/** A key-space response (also the shape of a watch event). */
export interface V2ResponseJSON {
  action: V2Action;
  node?: V2NodeJSON;
  prevNode?: V2NodeJSON;
}

export interface V2StoreStatsJSON {
  getsSuccess: number;
  getsFail: number;
  setsSuccess: number;
  setsFail: number;
  deleteSuccess: number;
  deleteFail: number;
  updateSuccess: number;
  updateFail: number;
  createSuccess: number;
  createFail: number;
  compareAndSwapSuccess: number;
  compareAndSwapFail: number;
  compareAndDeleteSuccess: number;
  compareAndDeleteFail: number;
  expireCount: number;
  watchers: number;
}

export interface V2MemberJSON {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
}
