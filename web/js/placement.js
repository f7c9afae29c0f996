/**
 * Start this page's agent where it should live, and give it a host:
 * - `?mode=worker` (the default): Pyodide in a dedicated Web Worker (worker-host.js), its tools
 *   registered by this page on its behalf, its fallback relayed by this page's hub;
 * - `?mode=main`: Pyodide on this page's main thread (boot.js), with this page's hub as its host;
 * - `?embedded=1` (the page is a same-origin iframe): the agent lives in the iframe's document
 *   and its host is the parent page's hub, reached with window.postMessage.
 *
 * Resolves to `{agent, native, context, hub, connected, pyodide?}`; `connected` resolves when the
 * router has welcomed the agent (over whichever transport).
 */

import { boot, defaultRouterUrl } from "./boot.js";
import { Channel } from "./channel.js";
import { Hub } from "./hub.js";
import { installModelContext } from "./webmcp.js";
import { startWorkerAgent } from "./worker-host.js";

export async function startPageAgent(config, { toolPrefix = "" } = {}) {
  if (config.embedded) {
    const parent = Channel.toWindow(window.parent, "parent");
    addEventListener("pagehide", () => parent.send("bye")); // the parent's hub forgets (and unrelays) us
    const booted = await boot(config, { uplink: parent.uplink() });
    return { ...booted, hub: null, connected: whenConnected(booted.agent) };
  }
  const hub = new Hub({ routerUrl: new URLSearchParams(location.search).get("hub_router") || defaultRouterUrl() });
  if (config.mode === "worker") {
    performance.mark("a2a:boot");
    // The worker first: its Pyodide starts while this page installs WebMCP (maybe the polyfill).
    const webmcp = installModelContext();
    const agent = startWorkerAgent(config, { context: webmcp.then(({ context }) => context), hub, toolPrefix });
    const { context, native } = await webmcp;
    await agent.started;
    return { agent, native, context, hub, connected: agent.connected };
  }
  const booted = await boot(config, { uplink: hub.connectLocal().uplink() });
  return { ...booted, hub, connected: whenConnected(booted.agent) };
}

/** A JS promise for a Python PageAgent's first welcome. */
export async function whenConnected(agent) {
  await agent.connected.wait();
}
