// Sign an approve/reject decision for a durable agent run, from any Node.js service
// (Node 18+, no dependencies). The workflow verifies it against the approver keys its
// workers hold (AGENT_APPROVER_KEYS); see docs/how-to/signed-decisions.md.
//
//   node examples/sign_decision.mjs KEY_FILE PAYLOAD_JSON
//   node examples/sign_decision.mjs --start KEY_FILE INPUT_JSON WORKFLOW_ID EXPIRES_AT
//
// KEY_FILE is what `agentctl keygen` writes: {"key_id", "owner", "private_key"}, the
// private key being the 32-byte Ed25519 seed in base64url. PAYLOAD_JSON is the decision
// payload exactly as it will be sent (call_id, decision, approver, run_id, execution_id,
// arguments_sha256, expires_at, ...: run_id, execution_id and arguments_sha256 as the
// pending item gives them). Prints the payload with its "signature".
// With --start, INPUT_JSON is an AgentWorkflow start input; prints it with its
// "start_signature" (who started the run, for policies that separate duties).

import { createPrivateKey, sign } from "node:crypto";
import { readFileSync } from "node:fs";

// RFC 8785 (JCS): ECMAScript serialisation of strings and numbers, object keys
// sorted by UTF-16 code units (JavaScript's default sort), no whitespace.
export function canonical(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
}

// The Ed25519 private key of a raw 32-byte seed (PKCS#8 DER: a fixed 16-byte prefix).
function privateKey(seed) {
  const prefix = Buffer.from("302e020100300506032b657004220420", "hex");
  return createPrivateKey({ key: Buffer.concat([prefix, seed]), format: "der", type: "pkcs8" });
}

export function signDecision(keyFile, payload) {
  const body = { ...payload };
  delete body.signature;
  const seed = Buffer.from(keyFile.private_key, "base64url");
  const sig = sign(null, Buffer.from(canonical(body), "utf8"), privateKey(seed));
  return { ...body, signature: { key_id: keyFile.key_id, sig: sig.toString("base64url") } };
}

export function signStart(keyFile, input, workflowId, expiresAt) {
  const claim = { key_id: keyFile.key_id, workflow_id: workflowId, expires_at: expiresAt };
  const body = { ...input, start_signature: claim };
  const seed = Buffer.from(keyFile.private_key, "base64url");
  const sig = sign(null, Buffer.from(canonical(body), "utf8"), privateKey(seed));
  return { ...input, start_signature: { ...claim, sig: sig.toString("base64url") } };
}

if (process.argv[2] === "--start" && process.argv.length === 7) {
  const keyFile = JSON.parse(readFileSync(process.argv[3], "utf8"));
  const input = JSON.parse(readFileSync(process.argv[4], "utf8"));
  const signed = signStart(keyFile, input, process.argv[5], process.argv[6]);
  process.stdout.write(JSON.stringify(signed) + "\n");
} else if (process.argv.length === 4) {
  const keyFile = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const payload = JSON.parse(readFileSync(process.argv[3], "utf8"));
  process.stdout.write(JSON.stringify(signDecision(keyFile, payload)) + "\n");
}
