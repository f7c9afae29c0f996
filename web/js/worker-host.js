/**
 * The page's side of an agent that lives in a dedicated Web Worker.
 *
 * Starting Pyodide is one 2-3 s task; in a worker it blocks the page for none of it. WebMCP tools
 * can only be registered from a Window, so the page registers the worker agent's tools on its
 * behalf (optionally under a name prefix, when the page hosts other agents with the same tools)
 * and forwards each call and its result over the worker's port. The worker's `a2a:*` events
 * (state, message) are re-dispatched on this window, its hub traffic goes to the page's hub.
 */

import { emit } from "./boot.js";
import { Channel } from "./channel.js";
import { registerTool } from "./webmcp.js";

/** `context`: the WebMCP context its tools go to, or a promise of it (the worker need not wait for it). */
export function startWorkerAgent(config, { context, hub = null, toolPrefix = "" }) {
  const worker = new Worker(new URL("./worker.js", import.meta.url), {
    type: "module",
    name: `agent ${config.agent_id}`,
  });
  const channel = Channel.overPort(worker, `worker ${config.agent_id}`);
  hub?.host(channel, "worker");
  const unregisters = [];
  const calls = new Map(); // call id -> resolve(result JSON)
  let nextCall = 1;
  let status = null;
  let connected;
  const whenConnected = new Promise((resolve) => (connected = resolve));
  const started = new Promise((resolve, reject) => {
    channel.on("started", () => resolve());
    channel.on("failed", ({ message }) => reject(new Error(`The agent worker failed to start: ${message}`)));
    worker.addEventListener("error", (event) => {
      reject(new Error(`The agent worker failed: ${event.message}`));
      for (const resolveCall of calls.values()) resolveCall(errorResult(`the agent worker failed: ${event.message}`));
      calls.clear();
    });
  });

  channel.on("tool", async (tool) => {
    const name = toolPrefix + tool.name;
    try {
      unregisters.push(
        await registerTool(await context, {
          name,
          title: tool.title,
          description: toolPrefix
            ? `[agent ${config.agent_id}, in a Web Worker] ${tool.description}`
            : tool.description,
          inputSchema: JSON.parse(tool.inputSchema),
          annotations: JSON.parse(tool.annotations),
          execute: async (input) => {
            const id = nextCall++;
            const text = await new Promise((resolve) => {
              calls.set(id, resolve);
              channel.send("call", { id, name: tool.name, args: JSON.stringify(input ?? {}) });
            });
            const result = JSON.parse(text);
            emit("tool", { agent_id: config.agent_id, name, arguments: input ?? {}, result });
            return result;
          },
        }),
      );
      channel.send("tool-registered", { name: tool.name });
    } catch (error) {
      channel.send("tool-registered", { name: tool.name, error: String(error?.message ?? error) });
    }
  });
  channel.on("call-result", ({ id, result }) => {
    calls.get(id)?.(result);
    calls.delete(id);
  });
  channel.on("emit", ({ event, detail }) => {
    const parsed = JSON.parse(detail);
    if (event === "state") {
      status = parsed;
      if (parsed.state === "connected") connected();
    }
    emit(event, parsed);
  });

  channel.send("start", { config });
  return {
    worker,
    channel,
    where: "worker",
    started,
    connected: whenConnected,
    status: () => status,
    terminate() {
      for (const unregister of unregisters) unregister();
      channel.send("bye");
      channel.close();
      worker.terminate();
    },
  };
}

function errorResult(text) {
  return JSON.stringify({ isError: true, content: [{ type: "text", text }] });
}
