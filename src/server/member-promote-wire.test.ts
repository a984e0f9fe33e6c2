import { test } from "node:test";
import assert from "node:assert/strict";
import { GrpcCode, V3Error } from "../api/v3-errors.ts";
import { LearnerNotReadyError, promoteErrorAnswer, readPromoteAnswer } from "./member-promote-wire.ts";

const NOT_READY = "etcdserver: can only promote a learner member which is in sync with leader";

test("a learner not in sync is a v3 error carrying FailedPrecondition and etcd's text", () => {
  const err = new LearnerNotReadyError();
  assert.ok(err instanceof V3Error, "the v3 API passes it on as it is");
  assert.equal(err.code, GrpcCode.FailedPrecondition);
  assert.equal(err.message, NOT_READY);
  assert.equal(err.name, "LearnerNotReadyError");
});

test("the leader's refusal crosses the peer route as 412 and comes back as the same error", () => {
  const answer = promoteErrorAnswer(new LearnerNotReadyError());
  assert.deepEqual(answer, { status: 412, body: `${NOT_READY}\n` });
  const read = readPromoteAnswer(answer.status, answer.body);
  assert.ok(typeof read === "object" && "error" in read && read.error instanceof LearnerNotReadyError);
  assert.equal((read.error as V3Error).code, GrpcCode.FailedPrecondition);
});
