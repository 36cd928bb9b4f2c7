// The approval inbox (client/inbox.py). Plain script, no build step, no dependency.
// Nothing a run says is ever parsed as markup: every value goes in with textContent
// (and the page's Trusted Types policy makes any HTML sink throw).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const SIGNED_LIFETIME_MS = 15 * 60 * 1000; // as agentctl (SIGNED_DECISION_LIFETIME)
  const PKCS8_ED25519 = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
    0x20,
  ]; // the DER header of an Ed25519 private key in PKCS#8; the 32-byte seed follows
  const state = { me: null, csrf: null, feed: null, key: null, shown: new Map(), decided: new Set() };

  // --- showing text safely --------------------------------------------------------------

  // Control, bidi and zero-width characters shown as \u{202e}, the CLI's rule
  // (workflows/argument_view.py `safe`): a value cannot reorder or hide what follows it.
  const INVISIBLE =
    /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}\ud800-\udfff]/gu;
  const safe = (text) =>
    String(text).replace(INVISIBLE, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
  const safeLines = (text) => String(text).split("\n").map(safe).join("\n");

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = value;
      else if (name === "class") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  // --- talking to the gateway -----------------------------------------------------------

  async function call(method, path, body) {
    const headers = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET" && state.csrf) headers["x-csrf-token"] = state.csrf;
    const answer = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
    let data = null;
    try {
      data = await answer.json();
    } catch {
      data = null;
    }
    return { status: answer.status, ok: answer.ok, data };
  }

  const problem = (answer) =>
    (answer.data && answer.data.error && answer.data.error.message) || `HTTP ${answer.status}`;

  // --- signing in and out ---------------------------------------------------------------

  function showSignIn(message) {
    stopFeed();
    state.me = null;
    state.csrf = null;
    $("inbox").hidden = true;
    $("who").hidden = true;
    $("sign-out").hidden = true;
    $("sign-in").hidden = false;
    $("sign-in-error").textContent = message || "";
    $("token").focus();
  }

  function showInbox(session) {
    state.me = session;
    state.csrf = session.csrf;
    $("sign-in").hidden = true;
    $("inbox").hidden = false;
    $("who").hidden = false;
    $("who").textContent = `Signed in as ${safe(session.caller)}`;
    $("sign-out").hidden = false;
    startFeed();
  }

  async function signIn(event) {
    event.preventDefault();
    const token = $("token").value;
    $("token").value = "";
    const answer = await call("POST", "/inbox/session", { token });
    if (!answer.ok) {
      showSignIn(problem(answer));
      return;
    }
    showInbox(answer.data);
  }

  async function signOut() {
    await call("POST", "/inbox/session/end");
    forgetKey();
    showSignIn("Signed out.");
  }

  // --- the live feed --------------------------------------------------------------------

  function startFeed() {
    stopFeed();
    const feed = new EventSource("/inbox/feed");
    state.feed = feed;
    feed.addEventListener("open", () => setConnection("Live: new calls appear here by themselves."));
    feed.addEventListener("calls", (event) => render(JSON.parse(event.data)));
    feed.addEventListener("signed_out", () => showSignIn("Your session has ended: sign in again."));
    feed.addEventListener("error", async () => {
      if (state.feed !== feed) return;
      setConnection("Connection lost: reconnecting… (what you see may be out of date)", true);
      if (feed.readyState === EventSource.CLOSED) {
        const session = await call("GET", "/inbox/session");
        if (session.status === 401) showSignIn("Your session has ended: sign in again.");
        else setTimeout(() => state.feed === feed && startFeed(), 2000);
      }
    });
  }

  function stopFeed() {
    if (state.feed) state.feed.close();
    state.feed = null;
  }

  function setConnection(text, lost = false) {
    $("connection").textContent = text;
    $("connection").className = lost ? "warning" : "";
  }

  function render(view) {
    if (view.error) setConnection(`The gateway cannot read the runs: ${safe(view.error)}`, true);
    else setConnection("Live: new calls appear here by themselves.");
    const list = $("calls");
    const keep = new Set();
    let previous = null;
    for (const item of view.calls) {
      const key = `${item.run_id}\u0000${item.call_id}`;
      if (state.decided.has(key)) continue;
      keep.add(key);
      let shown = state.shown.get(key);
      if (shown && shown.item.arguments_sha256 !== item.arguments_sha256) {
        shown.node.remove(); // other arguments now: shown afresh, never mixed
        shown = null;
      }
      if (!shown) {
        shown = { item, node: callNode(item, view.may_decide) };
        state.shown.set(key, shown);
      }
      const next = previous ? previous.nextElementSibling : list.firstElementChild;
      if (next !== shown.node) list.insertBefore(shown.node, next);
      previous = shown.node;
    }
    for (const [key, shown] of state.shown) {
      if (!keep.has(key)) {
        shown.node.remove();
        state.shown.delete(key);
      }
    }
    $("count").textContent = String(keep.size);
    $("empty").hidden = keep.size > 0;
    const silent = view.unanswered || [];
    $("unanswered").hidden = silent.length === 0;
    $("unanswered").textContent = silent.length
      ? `Runs that did not answer (their calls are not listed): ${silent.map(safe).join(", ")}`
      : "";
  }

  // --- one waiting call -----------------------------------------------------------------

  function callNode(item, mayDecide) {
    const id = `c${Math.random().toString(36).slice(2)}`;
    const policy = item.policy;
    const facts = el("dl", { class: "facts" });
    const fact = (name, value) => facts.append(el("dt", { text: name }), el("dd", { text: value }));
    fact("Agent", item.path.map(safe).join(" → "));
    fact("Run", safe(item.run_id));
    fact("Call id", safe(item.call_id));
    if (item.short_id) fact("Short id", safe(item.short_id));
    fact("Requested", item.requested_at);
    fact("Deadline", item.deadline ? `${item.deadline}, then ${policy.on_timeout}` : "none");
    if (policy) {
      fact("Why", safe(policy.why));
      fact("Who may decide", policy.approvers ? policy.approvers.map(safe).join(", ") : "anyone allowed here");
      if (policy.require_signature) fact("Signature", "required: load your key above");
      if (policy.separate_duties) fact("Separate duties", "whoever started the run may not approve");
      if (policy.limits.length) fact("Limits", policy.limits.map(safe).join("; "));
    } else {
      fact("Why", "the policy could not be read (the run did not answer)");
    }
    fact("Arguments SHA-256", item.arguments_sha256 || "(none: this run predates bound decisions)");

    const args = el("pre", { class: "arguments", "aria-label": "Arguments" });
    let revealed = !item.arguments_masked;
    const showArgs = () => {
      args.textContent = safeLines(revealed ? item.arguments_pretty : item.arguments_masked);
    };
    showArgs();
    let reveal = null;
    if (item.arguments_masked) {
      reveal = el("button", { type: "button", text: "Show sensitive values" });
      reveal.addEventListener("click", () => {
        revealed = !revealed;
        reveal.textContent = revealed ? "Hide sensitive values" : "Show sensitive values";
        showArgs();
      });
    }

    const reason = el("textarea", { id: `${id}-reason`, rows: 2 });
    // a call of an external tool takes an answer (JSON matching its schema), not an approval
    const asks = item.kind === "answer";
    const answerBox = asks ? el("textarea", { id: `${id}-answer`, rows: 4, class: "answer" }) : null;
    const approve = asks
      ? el("button", { type: "button", class: "approve", text: "Answer" })
      : el("button", { type: "button", class: "approve", text: "Approve" });
    const reject = el("button", { type: "button", class: "reject", text: "Reject" });
    const signed = el("pre", { class: "signed", hidden: true });
    const outcome = el("p", { class: "outcome", role: "status" });
    if (!mayDecide) {
      approve.disabled = reject.disabled = reason.disabled = true;
      if (answerBox) answerBox.disabled = true;
      outcome.textContent = "You may read but not decide (your caller has no decide scope).";
    }
    const node = el(
      "article",
      { class: "call", "data-call-id": item.call_id, "data-run-id": item.run_id, "aria-labelledby": `${id}-title` },
      el("h3", { id: `${id}-title`, text: `${safe(item.tool)} — ${safe(item.path[item.path.length - 1])}` }),
      facts,
      el("h4", { text: "Arguments, in full" }),
      args,
      reveal,
      asks ? el("h4", { text: "Waits for an answer matching" }) : null,
      asks ? el("pre", { class: "schema", text: safeLines(item.answer_schema_pretty || "{}") }) : null,
      asks ? el("label", { for: `${id}-answer`, text: "Answer (JSON)" }) : null,
      answerBox,
      el("label", { for: `${id}-reason`, text: "Reason" }),
      reason,
      el("div", { class: "actions" }, approve, reject),
      signed,
      outcome,
    );
    const decideWith = (decision) => () =>
      decide(item, decision, { node, reason, answerBox, buttons: [approve, reject], signed, outcome });
    approve.addEventListener("click", decideWith(asks ? "answer" : "approve"));
    reject.addEventListener("click", decideWith("reject"));
    return node;
  }

  async function decide(item, decision, view) {
    const needsKey = item.policy && item.policy.require_signature;
    if (needsKey && !state.key) {
      view.outcome.textContent = "This call needs a signed decision: load your key file above first.";
      return;
    }
    let result;
    if (decision === "answer") {
      try {
        result = JSON.parse(view.answerBox.value);
      } catch (err) {
        view.outcome.textContent = `The answer is not JSON: ${safe(err.message || err)} (a text answer is quoted: "yes")`;
        view.outcome.className = "outcome error";
        return;
      }
    }
    for (const button of view.buttons) button.disabled = true;
    view.outcome.textContent = "Sending…";
    const reason = view.reason.value.trim();
    let payload;
    try {
      payload = state.key ? await signedPayload(item, decision, reason, result) : unsigned(item, decision, reason, result);
    } catch (err) {
      view.outcome.textContent = `Could not sign: ${safe(err.message || err)}`;
      for (const button of view.buttons) button.disabled = false;
      return;
    }
    if (payload.signature) {
      view.signed.hidden = false;
      view.signed.textContent =
        `Signed with key ${safe(state.key.keyId)} (${safe(state.key.owner)}): ` +
        safeLines(canonical(withoutSignature(payload)));
    }
    const root = item.root_run_id.split("/").map(encodeURIComponent).join("/");
    const answer = await call("POST", `/runs/${root}/decisions`, payload);
    if (answer.ok) {
      const made = answer.data;
      const how = made.signed_by ? `, signed with ${safe(made.signed_by)}` : "";
      const verb = { approve: "Approved", reject: "Rejected", answer: "Answered" }[made.decision];
      view.outcome.className = "outcome";
      view.outcome.textContent =
        `${verb} by ${safe(made.approver)}${how} ` +
        `at ${made.at}${made.reason ? `: ${safe(made.reason)}` : ""}`;
      settle(item, view.node);
    } else {
      view.outcome.textContent = `Refused: ${safe(problem(answer))}`;
      view.outcome.className = "outcome error";
      if (answer.status === 401) showSignIn("Your session has ended: sign in again.");
      for (const button of view.buttons) button.disabled = false;
    }
  }

  function settle(item, node) {
    const key = `${item.run_id}\u0000${item.call_id}`;
    state.decided.add(key);
    state.shown.delete(key);
    node.removeAttribute("data-call-id");
    node.setAttribute("data-decided-call-id", item.call_id);
    for (const control of node.querySelectorAll("button, textarea")) control.disabled = true;
    $("decided").prepend(node);
    $("count").textContent = String(state.shown.size);
    $("empty").hidden = state.shown.size > 0;
  }

  function unsigned(item, decision, reason, result) {
    const payload = { call_id: item.call_id, decision, arguments_sha256: item.arguments_sha256, run_id: item.run_id };
    if (decision === "answer") payload.result = result;
    if (item.execution_id) payload.execution_id = item.execution_id;
    if (reason) payload.reason = reason;
    return payload;
  }

  // --- signing, exactly as `agentctl approve --key` (client/agent_client.decision_payload) -

  async function signedPayload(item, decision, reason, result) {
    if (!item.arguments_sha256) throw new Error("a signed decision binds to the arguments' digest, which this run does not give");
    const payload = {
      call_id: item.call_id,
      approver: state.key.owner,
      always: false,
      sender: `gateway:${state.me.caller}`,
      run_id: item.run_id,
      arguments_sha256: item.arguments_sha256,
      expires_at: new Date(Date.now() + SIGNED_LIFETIME_MS).toISOString().replace(/\.\d{3}Z$/, "Z"),
      decision,
    };
    if (reason) payload.reason = reason;
    if (item.execution_id) payload.execution_id = item.execution_id;
    if (decision === "answer") payload.result = result;
    const body = new TextEncoder().encode(canonical(payload));
    const sig = await crypto.subtle.sign({ name: "Ed25519" }, state.key.privateKey, body);
    return { ...payload, signature: { key_id: state.key.keyId, sig: b64url(new Uint8Array(sig)) } };
  }

  const withoutSignature = (payload) => {
    const { signature, ...rest } = payload;
    return rest;
  };

  // RFC 8785: keys sorted by UTF-16 code units, no whitespace, ECMAScript number and
  // string forms (which JSON.stringify writes): workflows/canonical.py's bytes.
  function canonical(value) {
    if (value === null || typeof value !== "object") {
      if (typeof value === "number" && !Number.isFinite(value)) throw new Error("not JSON");
      return JSON.stringify(value);
    }
    if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }

  function b64url(bytes) {
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function unb64url(text) {
    const plain = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(plain, (c) => c.charCodeAt(0));
  }

  async function loadKey() {
    const input = $("key-file");
    const file = input.files && input.files[0];
    input.value = ""; // the file's bytes are not kept by the input either
    if (!file) return;
    if (!window.isSecureContext || !crypto.subtle) {
      $("key-state").textContent =
        "Signing needs a secure page: open the inbox over https (or on the loopback address).";
      return;
    }
    try {
      const data = JSON.parse(await file.text());
      if (typeof data.key_id !== "string" || typeof data.owner !== "string" || typeof data.private_key !== "string") {
        throw new Error('expected {"key_id", "owner", "private_key"} as agentctl keygen writes');
      }
      const seed = unb64url(data.private_key);
      if (seed.length !== 32) throw new Error("private_key is not a 32-byte Ed25519 seed");
      const pkcs8 = new Uint8Array([...PKCS8_ED25519, ...seed]);
      seed.fill(0);
      const privateKey = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
      pkcs8.fill(0);
      state.key = { keyId: data.key_id, owner: data.owner, privateKey };
      $("key-state").textContent =
        `Key ${safe(data.key_id)} of ${safe(data.owner)} loaded: your decisions are signed with it, as ${safe(data.owner)}.`;
      $("forget-key").hidden = false;
    } catch (err) {
      state.key = null;
      $("key-state").textContent = `That file is not an approver key: ${safe(err.message || err)}`;
    }
  }

  function forgetKey() {
    state.key = null;
    $("key-state").textContent = "No key loaded: decisions are sent unsigned.";
    $("forget-key").hidden = true;
  }

  // --- start ----------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", async () => {
    $("sign-in").addEventListener("submit", signIn);
    $("sign-out").addEventListener("click", signOut);
    $("key-file").addEventListener("change", loadKey);
    $("forget-key").addEventListener("click", forgetKey);
    const session = await call("GET", "/inbox/session");
    if (session.ok) showInbox(session.data);
    else showSignIn();
  });
})();
