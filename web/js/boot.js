/**
 * Boot a Python agent on this page's main thread: WebMCP context, Pyodide + pydantic, the
 * project's package (runtime.js, shared with the agent worker), start.
 *
 * Resolves to `{pyodide, agent, native}`; `agent` is the Python PageAgent (a PyProxy).
 * `uplink` (optional) is the agent's line to the hub of the page hosting it (hub.js / channel.js).
 * Emits `a2a:*` CustomEvents on window: `progress` (start-up phases), `boot` (how Python started:
 * runtime.js), `state`, `message`, `tool` (every tool call and its result).
 * An agent in a Web Worker instead: worker-host.js.
 */

import { runPythonTool, startPython } from "./runtime.js";
import { installModelContext, registerTool } from "./webmcp.js";

/** Where the test page runs its agent by default (measured: see docs/notes/workers-and-frames.md). */
export const DEFAULT_MODE = "worker";

export function pageConfig(params = new URLSearchParams(location.search)) {
  const region = params.get("region")?.split(",").map(Number);
  const agentId = params.get("agent_id") || sessionAgentId();
  return {
    agent_id: agentId,
    credential: storedCredential(agentId),
    join_token: params.get("token") || null,
    agent_type: params.get("agent_type") || "executor",
    capabilities: params.get("capabilities")?.split(",").filter(Boolean) ?? [],
    region: region?.length === 4 ? { x: region[0], y: region[1], width: region[2], height: region[3] } : null,
    router_url: params.get("router") || defaultRouterUrl(),
    agent_url: params.get("agent") || null,
    ...placement(params),
  };
}

export function defaultRouterUrl() {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/a2a`;
}

// ?mode=worker|main: where the page's agent runs. ?embedded=1: the page is an iframe whose agent
// lives in the iframe's document and falls back to its parent's relay. ?probe_max_delay= and
// ?open_timeout= (seconds) tune the fallback (tests use short ones).
function placement(params) {
  const embedded = params.get("embedded") === "1" && window.parent !== window;
  const mode = embedded ? "main" : ["worker", "main"].includes(params.get("mode")) ? params.get("mode") : DEFAULT_MODE;
  const seconds = (name) => (Number(params.get(name)) > 0 ? { [name]: Number(params.get(name)) } : {});
  return {
    mode,
    embedded,
    where: embedded ? "iframe" : mode,
    ...seconds("probe_max_delay"),
    ...seconds("open_timeout"),
  };
}

// A generated id survives a reload of the same tab, so a reload is the same agent coming back.
function sessionAgentId() {
  let id = sessionStorage.getItem("a2a.agent_id");
  if (!id) {
    id = `page-${crypto.randomUUID().slice(0, 8)}`;
    sessionStorage.setItem("a2a.agent_id", id);
  }
  return id;
}

// An agent id belongs to whoever registered it first: the router's first welcome carries a
// credential that every later hello for the id must present. This origin keeps it per agent id,
// so a reload, another tab or this page's worker and iframes can come back as the same agent.
const CREDENTIAL_KEY = "a2a.credential.";

export function storedCredential(agentId) {
  return localStorage.getItem(CREDENTIAL_KEY + agentId);
}

export function emit(kind, detail) {
  if (kind === "credential") {
    // A secret: kept, never dispatched to page scripts.
    localStorage.setItem(CREDENTIAL_KEY + detail.agent_id, detail.credential);
    return;
  }
  window.dispatchEvent(new CustomEvent(`a2a:${kind}`, { detail }));
}

/** Report a start-up phase (runtime.js PHASES) as an `a2a:progress` event. */
export function progress(phase, detail = {}) {
  emit("progress", { phase, ...detail });
}

export async function boot(config = pageConfig(), { uplink = null } = {}) {
  performance.mark("a2a:boot");
  const [{ context, native }, { pyodide, boot: started }] = await Promise.all([
    installModelContext(),
    startPython(progress),
  ]);
  performance.mark("a2a:python-ready");
  emit("boot", started);
  progress("agent");

  const bridge = {
    registerTool: (name, title, description, schemaJson, annotationsJson, handler) =>
      registerTool(context, {
        name,
        title,
        description,
        inputSchema: JSON.parse(schemaJson),
        annotations: JSON.parse(annotationsJson),
        execute: async (input) => {
          const result = JSON.parse(await runPythonTool(handler, JSON.stringify(input ?? {})));
          emit("tool", { name, arguments: input ?? {}, result });
          return result;
        },
      }),
    emit: (kind, detailJson) => emit(kind, JSON.parse(detailJson)),
  };
  const page = pyodide.pyimport("webmcp_a2a.browser.page");
  const agent = await page.start(JSON.stringify(config), bridge, uplink);
  page.destroy();
  performance.mark("a2a:tools-registered");
  progress("router");
  return { pyodide, agent, native, context };
}
