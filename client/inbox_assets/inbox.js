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
    const fact = (name, value) =>
      facts.append(el("dt", { text: name }), typeof value === "string" ? el("dd", { text: value }) : el("dd", {}, value));
    fact("Agent", item.path.map(safe).join(" → "));
    fact("Run", safe(item.run_id));
    if (item.ui_url) {
      fact("In the Temporal UI", el("a", { href: item.ui_url, target: "_blank", rel: "noopener noreferrer", text: "Open this run" }));
    }
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
      fact("Always", policy.allow_always ? "allowed: an approval may cover later calls with the same arguments" : "not allowed by the policy");
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
    const choices = asks ? null : approvalChoices(item, id, mayDecide);
    const context = contextBox(item, id);
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
      context.node,
      choices ? choices.node : null,
      el("label", { for: `${id}-reason`, text: "Reason" }),
      reason,
      el("div", { class: "actions" }, approve, reject),
      choices ? choices.review : null,
      signed,
      outcome,
    );
    const decideWith = (decision) => () =>
      decide(item, decision, { node, reason, answerBox, choices, buttons: [approve, reject], signed, outcome });
    approve.addEventListener("click", decideWith(asks ? "answer" : "approve"));
    reject.addEventListener("click", decideWith("reject"));
    return node;
  }

  // --- what an approval may carry: edited arguments, always, whom it is made as ---------

  function approvalChoices(item, id, mayDecide) {
    const policy = item.policy;
    const node = el("div", { class: "choices" });
    const review = el("div", { class: "review", hidden: true });
    let editBox = null;
    let editing = false;
    if (item.args) {
      const toggle = el("button", { type: "button", text: "Edit arguments", "aria-expanded": "false" });
      const editLabel = el("label", { for: `${id}-edit`, text: "Edited arguments (JSON)", hidden: true });
      editBox = el("textarea", { id: `${id}-edit`, rows: 6, class: "edit", hidden: true, spellcheck: "false" });
      toggle.disabled = !mayDecide;
      toggle.addEventListener("click", () => {
        editing = !editing;
        editBox.hidden = editLabel.hidden = !editing;
        toggle.textContent = editing ? "Keep the model's arguments" : "Edit arguments";
        toggle.setAttribute("aria-expanded", String(editing));
        if (editing) {
          editBox.value = JSON.stringify(item.args, null, 2);
          editBox.focus();
        }
        review.hidden = true;
      });
      editBox.addEventListener("input", () => (review.hidden = true));
      node.append(toggle, editLabel, editBox);
    }
    let alwaysBox = null;
    let scopeBox = null;
    const scopes = alwaysScopes(item);
    if (policy && policy.allow_always) {
      alwaysBox = el("input", { type: "checkbox", id: `${id}-always`, class: "always" });
      alwaysBox.disabled = !mayDecide;
      scopeBox = el("select", { id: `${id}-scope` });
      scopes.forEach((scope, index) => scopeBox.append(el("option", { value: String(index), text: scope.text })));
      const scopeLine = el("div", { hidden: true }, el("label", { for: `${id}-scope`, text: "Which later calls" }), scopeBox);
      alwaysBox.addEventListener("change", () => (scopeLine.hidden = !alwaysBox.checked));
      node.append(
        el(
          "div",
          { class: "check" },
          alwaysBox,
          el("label", { for: `${id}-always`, text: "Always: decide later calls of this tool the same way, for the rest of this run" }),
        ),
        scopeLine,
      );
    }
    let asBox = null;
    const names = [...(state.me.approve_as || [state.me.caller])];
    if (state.me.approve_as_anyone && policy && policy.approvers) names.push(...policy.approvers);
    const unique = [...new Set(names)];
    if (unique.length > 1) {
      asBox = el("select", { id: `${id}-as` });
      const preferred = (policy && policy.approvers ? unique.find((n) => policy.approvers.includes(n)) : null) || state.me.caller;
      for (const name of unique) asBox.append(el("option", { value: name, text: safe(name), selected: name === preferred }));
      asBox.disabled = !mayDecide;
      node.append(el("label", { for: `${id}-as`, text: "Approve as" }), asBox);
    }

    function read(decision) {
      let edited = null;
      if (editing) {
        let parsed;
        try {
          parsed = JSON.parse(editBox.value);
        } catch (err) {
          throw new Error(`The edited arguments are not JSON: ${err.message || err}`);
        }
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
          throw new Error("The edited arguments must be a JSON object, as the model's are.");
        }
        if (canonical(parsed) !== canonical(item.args)) edited = parsed;
      }
      if (edited && decision !== "approve") {
        throw new Error("Edited arguments go with Approve only: press \u201cKeep the model's arguments\u201d to reject.");
      }
      const always = Boolean(alwaysBox && alwaysBox.checked);
      if (edited && always) {
        throw new Error("Always cannot go with edited arguments (the run refuses it: the rule would cover the arguments edited away). Untick Always or keep the model's arguments.");
      }
      const scope = always ? scopes[Number(scopeBox.value)] : null;
      return { arguments: edited, always, always_when: scope ? scope.when : null, approver: asBox ? asBox.value : null };
    }

    function showDiff(edited, send) {
      const lines = el("pre", { class: "diff", "aria-label": "Changes to the arguments" });
      for (const [mark, text] of argumentsDiff(item.args, edited)) {
        lines.append(el("span", { class: { "-": "del", "+": "ins", " ": "same" }[mark], text: `${mark} ${text}\n` }));
      }
      const confirm = el("button", { type: "button", class: "approve", text: "Send the edited approval" });
      const cancel = el("button", { type: "button", text: "Cancel" });
      confirm.addEventListener("click", () => {
        review.hidden = true;
        send();
      });
      cancel.addEventListener("click", () => (review.hidden = true));
      review.replaceChildren(el("h4", { text: "Your changes to the arguments" }), lines, confirm, cancel);
      review.hidden = false;
      confirm.focus();
    }

    function done() {
      review.hidden = true;
      for (const control of node.querySelectorAll("button, textarea, input, select")) control.disabled = true;
    }

    return { node, review, read, showDiff, done };
  }

  // What an `always` may cover: the same arguments (the run's default), the later calls
  // with the same value of one argument, or every later call within the policy's limits.
  function alwaysScopes(item) {
    const scopes = [{ text: "with these same arguments", when: null }];
    for (const [field, value] of Object.entries(item.args || {})) {
      if (value === null || typeof value === "object") continue;
      const shown = safe(canonical(value));
      scopes.push({ text: `with the same ${safe(field)} (${shown})`, when: [{ field, op: "==", value }] });
    }
    const limits = (item.policy && item.policy.limit_conditions) || [];
    if (limits.length && limits.every((c) => c.value !== null)) {
      scopes.push({ text: `any, within the policy's limits (${item.policy.limits.map(safe).join("; ")})`, when: limits });
    }
    return scopes;
  }

  // The arguments before and after an edit, one line per top-level field: unchanged
  // (" "), removed or old value ("-"), added or new value ("+").
  function argumentsDiff(before, after) {
    const lines = [];
    const keys = [...Object.keys(before), ...Object.keys(after).filter((k) => !(k in before))];
    for (const key of keys) {
      const name = safe(JSON.stringify(key));
      const old = key in before ? safe(canonical(before[key])) : null;
      const now = key in after ? safe(canonical(after[key])) : null;
      if (old === now) lines.push([" ", `${name}: ${old}`]);
      else {
        if (old !== null) lines.push(["-", `${name}: ${old}`]);
        if (now !== null) lines.push(["+", `${name}: ${now}`]);
      }
    }
    return lines;
  }

  // --- the context of a decision, read when asked ---------------------------------------

  function contextBox(item, id) {
    const button = el("button", { type: "button", text: "Show the conversation", "aria-expanded": "false", "aria-controls": `${id}-context` });
    const region = el("div", { id: `${id}-context`, class: "context", hidden: true, role: "region", "aria-label": "The run's conversation" });
    button.addEventListener("click", async () => {
      if (!region.hidden) {
        region.hidden = true;
        button.textContent = "Show the conversation";
        button.setAttribute("aria-expanded", "false");
        return;
      }
      button.disabled = true;
      region.hidden = false;
      region.replaceChildren(el("p", { text: "Reading the run…" }));
      const path = item.run_id.split("/").map(encodeURIComponent).join("/");
      const answer = await call("GET", `/inbox/context/${path}`);
      button.disabled = false;
      button.textContent = "Hide the conversation";
      button.setAttribute("aria-expanded", "true");
      if (!answer.ok) {
        region.replaceChildren(el("p", { class: "error", text: `Could not read the run: ${safe(problem(answer))}` }));
        return;
      }
      const found = answer.data;
      const list = el("ol", { class: "conversation" });
      for (const entry of found.conversation) {
        const more = entry.cut ? ` … (${entry.cut} more characters)` : "";
        list.append(el("li", { class: entry.kind }, el("strong", { text: `${entry.kind}: ` }), el("span", { text: safeLines(entry.text) + more })));
      }
      const shown = [
        el("p", { class: "summary", text: `Summary: ${safe(found.summary || "(none)")}` }),
        el("p", { class: "run-status", text: safe(found.status) }),
        found.earlier ? el("p", { text: `${found.earlier} earlier entries not shown (agentctl state ${safe(found.run_id)} prints them all).` }) : null,
        list,
        found.ui_url ? el("p", {}, el("a", { href: found.ui_url, target: "_blank", rel: "noopener noreferrer", text: "Open this run in the Temporal UI" })) : null,
      ];
      region.replaceChildren(...shown.filter((node) => node !== null));
    });
    return { node: el("div", { class: "context-box" }, button, region) };
  }

  async function decide(item, decision, view, confirmed = false) {
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
    let chosen = { always: false, always_when: null, arguments: null, approver: null };
    if (view.choices) {
      try {
        chosen = view.choices.read(decision);
      } catch (err) {
        view.outcome.textContent = safe(err.message || err);
        view.outcome.className = "outcome error";
        return;
      }
      if (chosen.arguments && !confirmed) {
        view.choices.showDiff(chosen.arguments, () => decide(item, decision, view, true));
        view.outcome.className = "outcome";
        view.outcome.textContent = "Check the changes below, then send the edited approval.";
        return;
      }
    }
    for (const button of view.buttons) button.disabled = true;
    view.outcome.className = "outcome";
    view.outcome.textContent = "Sending…";
    const reason = view.reason.value.trim();
    let payload;
    try {
      payload = state.key
        ? await signedPayload(item, decision, reason, result, chosen)
        : unsigned(item, decision, reason, result, chosen);
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
      const edited = made.arguments ? " with edited arguments" : "";
      const covers = made.always_when
        ? made.always_when.map((c) => `${safe(c.field)} ${c.op} ${safe(canonical(c.value))}`).join(" and ")
        : "the same arguments";
      const always = made.always ? ` (always: later calls with ${covers} too)` : "";
      view.outcome.className = "outcome";
      view.outcome.textContent =
        `${verb}${edited} by ${safe(made.approver)}${how}${always} ` +
        `at ${made.at}${made.reason ? `: ${safe(made.reason)}` : ""}`;
      if (view.choices) view.choices.done();
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

  function unsigned(item, decision, reason, result, chosen) {
    const payload = { call_id: item.call_id, decision, arguments_sha256: item.arguments_sha256, run_id: item.run_id };
    if (chosen.approver) payload.approver = chosen.approver;
    if (chosen.always) payload.always = true;
    if (chosen.always_when) payload.always_when = chosen.always_when;
    if (chosen.arguments) payload.arguments = chosen.arguments;
    if (decision === "answer") payload.result = result;
    if (item.execution_id) payload.execution_id = item.execution_id;
    if (reason) payload.reason = reason;
    return payload;
  }

  // --- signing, exactly as `agentctl approve --key` (client/agent_client.decision_payload) -

  async function signedPayload(item, decision, reason, result, chosen) {
    if (!item.arguments_sha256) throw new Error("a signed decision binds to the arguments' digest, which this run does not give");
    const payload = {
      call_id: item.call_id,
      approver: state.key.owner,
      always: Boolean(chosen.always),
      sender: `gateway:${state.me.caller}`,
      run_id: item.run_id,
      arguments_sha256: item.arguments_sha256,
      expires_at: new Date(Date.now() + SIGNED_LIFETIME_MS).toISOString().replace(/\.\d{3}Z$/, "Z"),
      decision,
    };
    if (reason) payload.reason = reason;
    if (item.execution_id) payload.execution_id = item.execution_id;
    if (decision === "answer") payload.result = result;
    if (chosen.arguments) payload.arguments = chosen.arguments;
    if (chosen.always_when) payload.always_when = chosen.always_when;
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
    if (session.ok) return showInbox(session.data);
    if (session.data && session.data.proxy === true) {
      // a trusted proxy vouches for who this is: sign in as that caller, no token
      const vouched = await call("POST", "/inbox/session", { proxy: true });
      if (vouched.ok) return showInbox(vouched.data);
      return showSignIn(problem(vouched));
    }
    showSignIn();
  });
})();
