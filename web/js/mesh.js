/**
 * The mesh test page: one hub hosting four agents - this page's main thread, a Web Worker, and two
 * same-origin iframes (the test page embedded with `?embedded=1`) - and a table of where each
 * lives and which transport it is on.
 *
 * Query: `prefix` (agent ids are PREFIX-main, -worker, -frame-a, -frame-b), per agent a router URL
 * to try first (`main_router`, `worker_router`, `frame_a_router`, `frame_b_router`: point one at a
 * refused port to put that agent on the fallback), `probe_max_delay` / `open_timeout` (seconds).
 * For tests: `window.mesh` = {ids, hub, drops, ready, main, worker}.
 */

import { boot, defaultRouterUrl, storedCredential } from "./boot.js";
import { drops } from "./channel.js";
import { Hub } from "./hub.js";
import { whenConnected } from "./placement.js";
import { installModelContext } from "./webmcp.js";
import { startWorkerAgent } from "./worker-host.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const prefix = params.get("prefix") || `mesh-${crypto.randomUUID().slice(0, 6)}`;
const tuning = {};
for (const name of ["probe_max_delay", "open_timeout"])
  if (Number(params.get(name)) > 0) tuning[name] = Number(params.get(name));

const AGENTS = {
  main: { agent_id: `${prefix}-main`, agent_type: "executor", router: params.get("main_router") },
  worker: { agent_id: `${prefix}-worker`, agent_type: "analyzer", router: params.get("worker_router") },
  frameA: { agent_id: `${prefix}-frame-a`, agent_type: "monitor", router: params.get("frame_a_router") },
  frameB: { agent_id: `${prefix}-frame-b`, agent_type: "evolver", router: params.get("frame_b_router") },
};

const hub = new Hub({ routerUrl: defaultRouterUrl() });

function config({ agent_id, agent_type, router }, where) {
  return {
    agent_id,
    agent_type,
    credential: storedCredential(agent_id),
    join_token: params.get("token") || null,
    capabilities: [],
    region: null,
    router_url: router || defaultRouterUrl(),
    mode: where === "worker" ? "worker" : "main",
    where,
    embedded: false,
    ...tuning,
  };
}

function render() {
  const rows = hub.table().sort((a, b) => a.agent_id.localeCompare(b.agent_id));
  $("agent-rows").replaceChildren(
    ...rows.map((row) => {
      const tr = document.createElement("tr");
      tr.dataset.agentId = row.agent_id;
      const cells = [row.agent_id, row.where, row.transport ?? "none", row.state, row.relayed ? "yes" : "no"];
      tr.append(...cells.map((text) => Object.assign(document.createElement("td"), { textContent: text })));
      tr.children[2].dataset.transport = row.transport ?? "none";
      return tr;
    }),
  );
  $("relay-state").textContent = hub.relayOpen ? "open" : "closed";
  $("relay-counts").textContent = `${hub.stats.relayed_out} / ${hub.stats.relayed_in}`;
  $("local-count").textContent = String(hub.stats.local_delivered);
  $("dropped").textContent =
    `${drops.total} (${drops.foreign_origin} from another origin, ${drops.unknown_source} from unknown windows, ${drops.malformed} malformed)`;
}
hub.onChange(render);
drops.listeners.add(render);

/** Resolves once the hub has heard that `agentId` is connected. */
function hubConnected(agentId) {
  return new Promise((resolve) => {
    const check = () => {
      if (!hub.table().some((row) => row.agent_id === agentId && row.state === "connected")) return;
      stop();
      resolve();
    };
    const stop = hub.onChange(check);
    check();
  });
}

function addFrame(key, id) {
  const agent = AGENTS[key];
  const query = new URLSearchParams({
    embedded: "1",
    agent_id: agent.agent_id,
    agent_type: agent.agent_type,
    router: agent.router || defaultRouterUrl(),
    ...tuning,
  });
  const iframe = Object.assign(document.createElement("iframe"), { id, name: id, title: `agent ${agent.agent_id}` });
  iframe.src = `/?${query}`;
  $("frames").append(iframe);
  hub.hostFrame(iframe); // right away: the parent checks every message against this window
  return hubConnected(agent.agent_id);
}

async function start() {
  // The worker first: its Pyodide starts off this thread while the rest loads.
  const webmcp = installModelContext();
  const context = webmcp.then(({ context }) => context);
  const worker = startWorkerAgent(config(AGENTS.worker, "worker"), { context, hub, toolPrefix: "worker." });
  const { native } = await webmcp;
  const frames = [addFrame("frameA", "frame-a"), addFrame("frameB", "frame-b")];
  const main = await boot(config(AGENTS.main, "main"), { uplink: hub.connectLocal().uplink() });
  window.mesh.main = main.agent;
  await Promise.all([worker.started, worker.connected, whenConnected(main.agent), ...frames]);
  document.documentElement.dataset.mesh = "ready";
  return { native, worker, main };
}

window.mesh = {
  prefix,
  ids: Object.fromEntries(Object.entries(AGENTS).map(([key, { agent_id }]) => [key, agent_id])),
  hub,
  drops,
};
const ready = start();
window.mesh.ready = ready.then(() => true);
ready.then(({ native, worker }) => Object.assign(window.mesh, { native, worker }));
ready.catch((error) => {
  document.documentElement.dataset.mesh = "failed";
  console.error(error);
});
render();
