"""The pinned names of the contract (see DESIGN.md), defined once.

Other services, operators and the acceptance checks depend on these strings:
never rename one without a versioning plan.
"""

WORKFLOW_TYPE = "AgentWorkflow"
WORKFLOW_STORE_GC = "AgentStoreGC"
"""Payload-store retention, run by a schedule (`agentctl store gc --schedule`)."""
STORE_GC_SCHEDULE = "durable-agents-store-gc"
"""The id of that schedule (one per namespace: a store serves one namespace)."""
WORKFLOW_WEBHOOK_DELIVERY = "AgentWebhookDelivery"
"""One run event delivered to one webhook endpoint (`workflows.webhook_delivery`)."""
DEFAULT_TASK_QUEUE = "agents"

SIGNAL_APPROVE = "approve"
SIGNAL_REJECT = "reject"
SIGNAL_ANSWER = "answer"
"""The answer to a call of an external tool (`workflows.answers`)."""
SIGNAL_SEND_MESSAGE = "send_message"
SIGNAL_END_SESSION = "end_session"
SIGNAL_REFRESH_TOOLS = "refresh_tools"
"""`{"by"?: str}`: list the run's MCP tools again before its next model call."""
SIGNAL_WEBHOOK_DELIVERY = "webhook_delivery"
"""How a webhook delivery of the run goes, from its delivery workflow (informational:
recorded in `RunState.webhook_deliveries`, it decides nothing)."""
SIGNAL_SUB_RUN_REPORT = "sub_run_report"
"""A run called as a tool, to its caller (`workflows.tree_approvals`): the calls waiting
for a decision in it and below it, and its answers to decisions passed down."""
SIGNAL_FORWARDED_DECISION = "forwarded_decision"
"""A caller, to the run below it that holds a call: a `decide` update sent to the caller
for that call (`workflows.tree_approvals`); answered in the next `sub_run_report`."""
SIGNAL_SUB_RUN_FINISHED = "sub_run_finished"
"""A run started in the background, to its caller's workflow id (`workflows.background`):
how it ended; its final output reaches the caller's model as a message."""
SIGNAL_CALLER_CHECK = "caller_check"
"""A caller, now and then, to a run it started in the background (`workflows.background`):
taken and dropped, whatever it carries; that it cannot be delivered tells the caller the
run has ended (terminated or timed out, it could not say so itself)."""
TREE_SIGNALS = (SIGNAL_SUB_RUN_REPORT, SIGNAL_SUB_RUN_FINISHED)
"""Signals from runs below: one that comes while the run starts waits for its state
(a child in the background reports to a caller that is continuing as new)."""
SIGNAL_PAUSE = "pause"
SIGNAL_RESUME = "resume"
UPDATE_PAUSE = "pause"
"""The `pause` update: as the signal, answered with the run's status."""
UPDATE_RESUME = "resume"
"""The `resume` update: as the signal, answered with the run's status."""
UPDATE_DECIDE = "decide"
UPDATE_SEND_MESSAGE = "send_message"
"""The `send_message` update: as the signal, answered (a message the run refuses, e.g.
`while_busy="reject"` while it works, is refused by the validator)."""
UPDATE_INTERRUPT = "interrupt"
"""`{"by"?: str, "reason"?: str}`: stop the current turn (`workflows.interrupts`)."""
QUERY_GET_STATE = "get_state"
QUERY_GET_STATUS = "get_status"
QUERY_GET_PENDING_APPROVALS = "get_pending_approvals"
EVENTS_TOPIC = "events"
MAX_DELTA_CHARS = 16 * 1024
"""The most characters of text one published delta carries (a longer one is split)."""
"""The Workflow Streams topic of a run's events (`workflows.event_stream`)."""
STREAM_POLL = "__temporal_workflow_stream_poll"
"""Workflow Streams' poll: an update (a follower waits for new events) and a query
(a read that waits for nothing, and works on a run that has ended)."""
STREAM_PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""Workflow Streams' publish signal: a run takes only the batches of its model call under
way, tagged with the workers' gate keys (`durable_agents.stream_gate`)."""
STREAM_VERDICT = "stream_gate"
"""The gate's verdict, appended to a publish signal's arguments: `{"stream_gate": "taken"
| "unchecked" | "refused", "why"?: str}`; a publish without it is refused."""
SENDER_EXECUTION = "execution"
"""In the gate's verdict on a signal from a run below (`sub_run_finished`,
`sub_run_report`): the sender's execution (its first execution run id) that its tag
covers; the receiver takes it only from the execution it started."""

ACTIVITY_DESCRIBE_AGENT = "describe_agent"
ACTIVITY_CALL_MODEL = "call_model"
ACTIVITY_RUN_TOOL = "run_tool"
ACTIVITY_RUN_GUARDRAIL = "run_guardrail"
ACTIVITY_EVALUATE_CALL = "evaluate_call"
"""An approval policy's evaluator on one waiting call (`ApprovalPolicy.evaluator`)."""
ACTIVITY_DELIVER_WEBHOOK = "deliver_webhook"
ACTIVITY_COLLECT_STORE_GARBAGE = "collect_store_garbage"
ACTIVITY_FRESH_ID = "fresh_id"
"""A local activity: an id no one can compute from the run's history
(`workflows.fresh_ids`)."""
EXTERN_SECRET_ID = "durable_agents.secret_id"
"""The workflow-side gate's function (a Temporal extern function) that makes the part of
a child's or delivery's workflow id only the workers' keys can make
(`workflows.secret_ids`)."""

# ApplicationError types raised by our activities and the workflow.
ERROR_UNKNOWN_AGENT = "UnknownAgent"
ERROR_MODEL_REQUEST = "ModelRequestError"
ERROR_MODEL_UNAVAILABLE = "ModelUnavailable"
ERROR_MODEL_REPLY = "ModelReplyError"
ERROR_RUN_FAILED = "AgentRunFailed"
ERROR_SUB_RUN_FAILED = "SubRunFailed"
"""A run that called an agent as a tool with `on_failure="fail_run"` fails with this
when that child does not complete."""
ERROR_INVALID_INPUT = "InvalidAgentInput"
ERROR_DECISION_REFUSED = "DecisionRefused"
ERROR_APPROVAL_KEY_REVOKED = "ApprovalKeyRevoked"
"""`run_tool` refused a call approved with a key its worker no longer trusts: the run
asks again (`workflows.revoked_approvals`)."""
ERROR_PAUSE_REFUSED = "PauseRefused"
ERROR_MESSAGE_REFUSED = "MessageRefused"
"""A `send_message` update the run cannot take (too long, ended, busy with `reject`)."""
ERROR_INTERRUPT_REFUSED = "InterruptRefused"
"""An `interrupt` update the run cannot take (ended, waiting for input, starting)."""
ERROR_STATE_QUERY_REFUSED = "StateQueryRefused"
"""A `pause` or `resume` update the run cannot take (ended, already so, starting)."""
ERROR_MCP_UNAVAILABLE = "MCPServerUnavailable"
ERROR_TOO_MANY_FOLLOWERS = "TooManyFollowers"
"""A poll of a run's events refused: as many followers as the run allows wait."""
MCP_IDEMPOTENCY_KEY = "durable-agents/idempotency-key"
"""The `_meta` key of an MCP `tools/call` request that carries the call's idempotency
key (the same on every attempt, after continue-as-new and in a resumed run), so a
server can make a retried call take effect once."""
MCP_APPROVAL_KEYS = "durable-agents/approval-keys"
"""The `_meta` key of an MCP `tools/call` activity's request that carries the keys that
signed the call's approvals (`KEY_ID PUBLIC_KEY`): the worker's gate checks them against
the keys it trusts now and takes them out before the call reaches the server
(`activities.revoked_keys`)."""
ERROR_APPROVAL_TIMEOUT = "ApprovalTimeout"
ERROR_TOOL_TIMEOUT = "ToolTimeout"
"""An attempt of a tool cut off at its start-to-close timeout (retryable)."""
ERROR_TOOL_RESULT = "ToolResultNotSerialisable"
ERROR_GUARDRAIL_TRIPPED = "GuardrailTripped"
"""An input or output guardrail stopped the run (status `guardrail_tripped`)."""
ERROR_UNKNOWN_GUARDRAIL = "UnknownGuardrail"
ERROR_BUDGET_EXCEEDED = "BudgetExceeded"
"""The next model call could pass the run's token budget (status `budget_exceeded`)."""
ERROR_OUTPUT_INVALID = "OutputInvalid"
"""The final reply never matched the agent's output type (status `output_invalid`)."""
ERROR_OUTPUT_TYPE_UNKNOWN = "OutputTypeUnknown"
ERROR_INPUT_FILTER = "InputFilterInvalid"
"""A handoff's input filter in code gave back something it was not given."""
ERROR_INSTRUCTIONS_FAILED = "InstructionsFailed"
"""An agent's instructions function raised, gave no text, or gave too much (the run
fails with the reason: a model is never called with instructions left out)."""
"""A model call asked to check an output type this worker's agents do not define
(retryable: a worker of the run's build can take it)."""

# A payload the data converter could not read for the workflow (`dataplane.codec`):
# its data is the reason. Signals and the input are taken raw, so the run records it.
ENCODING_UNDECODABLE = b"binary/undecodable"
UNDECODABLE_REFUSED = "undecodable-refused"
"""Metadata set when it was refused by policy (plaintext where only ciphertext is taken)."""
