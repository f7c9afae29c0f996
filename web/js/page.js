/**
 * The test page: boots the agent, then shows who it is, its connection, its tools and a live log.
 * Tool calls from the form go through `navigator.modelContext.callTool`, the path an AI agent uses.
 *
 * For tests and page scripts: `window.a2a.ready` resolves once the tools are registered and the
 * router has welcomed the agent; `window.a2a.agent` is the Python PageAgent.
 */

import { pageConfig, progress } from "./boot.js";
import { drops } from "./channel.js";
import { ToolConsole } from "./console.js";
import { startPageAgent } from "./placement.js";
import { PHASES } from "./runtime.js";

const $ = (id) => document.getElementById(id);
const config = pageConfig();

const EXAMPLES = {
  a2a_send_message: {
    target_agent_id: "bob",
    message_type: "notification",
    payload: { text: `hello from ${config.agent_id}` },
  },
  a2a_broadcast: { agent_type: "all", message_type: "notification", payload: { text: "hello, everyone" } },
  a2a_subscribe: { event_type: "peer_discovered" },
  a2a_inbox: { wait_seconds: 0 },
  a2a_publish: {
    event_type: "region_change",
    payload: { change: "door opened" },
    region: { x: 0, y: 0, width: 10, height: 10 },
  },
  a2a_unsubscribe: { subscription_id: "sub-..." },
  a2a_discover: { agent_type: "monitor" },
  a2a_lock: { name: "printer", action: "acquire", wait_seconds: 5 },
  a2a_barrier: { name: "round-1", count: 2, timeout_seconds: 30 },
  a2a_request: { target_agent_id: "bob", payload: { task: "summarise" }, timeout_seconds: 10 },
};

$("agent-id").textContent = config.agent_id;
$("agent-type").textContent = config.agent_type;
$("router-url").textContent = config.router_url;

const LOG_LIMIT = 200; // a page left open for hours keeps the newest entries only
// Entries wait for the next frame: a tool call or a message does not wait for the page's DOM.
const unrendered = [];

function log(kind, summary, detail) {
  unrendered.push({ kind, summary, detail, at: new Date() });
  if (unrendered.length > LOG_LIMIT) unrendered.shift(); // a hidden tab draws no frames
  if (unrendered.length === 1) requestAnimationFrame(renderLog);
}

function renderLog() {
  const items = unrendered.splice(0).map(({ kind, summary, detail, at }) => {
    const item = document.createElement("li");
    item.className = `log-${kind}`;
    item.innerHTML = `<time></time> <b></b> <span></span>`;
    item.querySelector("time").textContent = at.toLocaleTimeString([], { hour12: false });
    item.querySelector("b").textContent = kind;
    item.querySelector("span").textContent = summary;
    if (detail !== undefined) {
      // Folded, and written out only when unfolded: most entries are never read.
      const more = document.createElement("details");
      more.innerHTML = "<summary>details</summary><pre></pre>";
      more.addEventListener("toggle", () => {
        more.querySelector("pre").textContent ||= JSON.stringify(detail, null, 2);
      });
      item.append(more);
    }
    return item;
  });
  $("log").prepend(...items.reverse());
  while ($("log").childElementCount > LOG_LIMIT) $("log").lastElementChild.remove();
}

const PLACES = {
  main: "this page's main thread",
  worker: "a Web Worker of this page",
  iframe: "this iframe (hosted by its parent page)",
};
$("where").textContent = PLACES[config.where];
const showDrops = () =>
  ($("dropped").textContent = `${drops.total} dropped (${drops.foreign_origin} from another origin)`);
drops.listeners.add(showDrops);
showDrops();

window.addEventListener("a2a:state", ({ detail }) => {
  if (detail.agent_id && detail.agent_id !== config.agent_id) return; // another agent of this page
  $("transport").textContent = detail.transport
    ? `${detail.transport}${detail.fallback ? " (fallback: relayed by the host page)" : ""}`
    : "none";
  $("transport").dataset.transport = detail.transport ?? "none";
  $("state").textContent = detail.state;
  $("state").dataset.state = detail.state;
  $("state-detail").textContent = detail.reason
    ? `${detail.reason}${detail.retry_in ? `, retry in ${detail.retry_in}s` : ""}`
    : `via ${detail.transport}`;
  if (detail.state === "refused" && $("startup").dataset.phase !== "ready") startupFailed(`refused: ${detail.reason}`);
  log("state", `${detail.state}${detail.reason ? ` (${detail.reason})` : ""}`);
});

window.addEventListener("a2a:error", ({ detail }) => log("error", detail.message));

window.addEventListener("a2a:boot", ({ detail }) => {
  window.a2a.boot = detail;
  log("boot", `Python started: snapshot ${detail.snapshot}, bytecode ${detail.bytecode}`);
});

// Start-up progress: the phase, its share of the bar, the time since navigation; what failed, and why.
const PHASE_TEXT = {
  download: "downloading Python",
  python: "starting Python",
  packages: "loading pydantic",
  agent: "starting the agent and registering its tools",
  router: "joining the router",
  ready: "ready",
};

window.addEventListener("a2a:progress", ({ detail }) => {
  if ($("startup").dataset.phase === "failed") return; // what is still under way says nothing more
  const at = Math.round(performance.now());
  window.a2a.progress.push({ ...detail, at });
  const within = detail.total ? detail.loaded / detail.total : 0;
  $("boot-progress").value = Math.round(((PHASES.indexOf(detail.phase) + within) / (PHASES.length - 1)) * 100);
  const bytes = detail.total ? ` (${megabytes(detail.loaded)} of ${megabytes(detail.total)} MB)` : "";
  $("boot-phase").textContent = `${PHASE_TEXT[detail.phase]}${bytes}, ${at} ms after navigation`;
  $("startup").dataset.phase = detail.phase;
});

const megabytes = (bytes) => (bytes / 2 ** 20).toFixed(1);

function startupFailed(reason) {
  const phase = $("startup").dataset.phase;
  if (phase === "failed") return;
  $("boot-phase").textContent = `failed while ${PHASE_TEXT[phase] ?? "loading the page's scripts"}: ${reason}`;
  $("startup").dataset.failedPhase = phase;
  $("startup").dataset.phase = "failed";
}

window.addEventListener("a2a:message", ({ detail }) => {
  const what = detail.subscription_id ? `event on ${detail.to_agent}` : detail.message_type;
  log("received", `${what} from ${detail.from_agent}`, detail);
});

window.addEventListener("a2a:tool", ({ detail }) => {
  const text = detail.result?.content?.[0]?.text?.split("\n")[0] ?? "";
  log(detail.result?.isError ? "error" : "tool", `${detail.name}: ${text}`, {
    arguments: detail.arguments,
    result: detail.result?.structuredContent,
  });
});

function showTools(tools) {
  $("tool-list").replaceChildren(
    ...tools.map(({ name, title }) => {
      const item = document.createElement("li");
      item.innerHTML = "<code></code> <span></span>";
      item.querySelector("code").textContent = name;
      item.querySelector("span").textContent = title ?? "";
      return item;
    }),
  );
  toolConsole.showTools(tools);
}

const toolConsole = new ToolConsole(
  {
    name: $("tool-name"),
    description: $("tool-description"),
    fields: $("tool-fields"),
    json: $("tool-args"),
    modes: $("tool-modes"),
    form: $("tool-form"),
    result: $("tool-result"),
    text: $("tool-text"),
    history: $("tool-history"),
  },
  EXAMPLES,
);

async function start() {
  const booted = await startPageAgent(config);
  $("webmcp-kind").textContent = booted.native ? "native document.modelContext" : "polyfill (@mcp-b/webmcp-polyfill)";
  showTools(await navigator.modelContext.listTools());
  await booted.connected;
  performance.mark("a2a:ready");
  progress("ready");
  const { agent, pyodide, native, hub } = booted;
  Object.assign(window.a2a, { agent, pyodide, native, hub }); // before "ready": waiters find them set
  document.documentElement.dataset.a2a = "ready";
  return booted;
}

window.a2a = { config, drops, progress: [], console: toolConsole };
const ready = start();
window.a2a.ready = ready.then(() => true);
ready.catch((error) => {
  startupFailed(error.message);
  $("state").textContent = "failed";
  $("state").dataset.state = "failed";
  log("error", `start-up failed: ${error.message}`);
  console.error(error);
});
