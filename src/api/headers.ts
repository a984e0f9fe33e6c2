// Header names. kvctl sends X-Kv-* where etcd sends X-Etcd-*, and the X-Etcd-* aliases too
// (same values) because existing v2 client libraries read those.
export const Header = {
  kvIndex: "X-Kv-Index",
  kvClusterId: "X-Kv-Cluster-Id",
  etcdIndex: "X-Etcd-Index",
  etcdClusterId: "X-Etcd-Cluster-Id",
  raftIndex: "X-Raft-Index",
  raftTerm: "X-Raft-Term",
} as const;
