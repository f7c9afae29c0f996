/**
 * A Python agent in a dedicated module Worker: Pyodide starts here, so the page never freezes.
 *
 * The page sends `start {config}` over the worker's port; the agent then lives in
 * py/webmcp_a2a/browser/worker.py. Its WebMCP tools are announced to the page (`tool`), which
 * registers them and forwards calls (`call` -> `call-result`); its events go to the page (`emit`);
 * its hub traffic (relay fallback, local routes) uses the same port.
 */

import { Channel } from "./channel.js";
import { runPythonTool, startPython } from "./runtime.js";

const page = Channel.overPort(self, "page");
const handlers = new Map(); // tool name -> Python handler (runPythonTool)
const registrations = new Map(); // tool name -> {resolve, reject} until the page confirms

page.on("start", async ({ config }) => {
  try {
    const progress = (phase, detail = {}) =>
      page.send("emit", { event: "progress", detail: JSON.stringify({ phase, ...detail }) });
    const { pyodide, boot } = await startPython(progress);
    page.send("emit", { event: "boot", detail: JSON.stringify(boot) });
    progress("agent");
    const bridge = {
      registerTool: (name, title, description, schemaJson, annotationsJson, handler) =>
        new Promise((resolve, reject) => {
          handlers.set(name, handler);
          registrations.set(name, { resolve, reject });
          page.send("tool", { name, title, description, inputSchema: schemaJson, annotations: annotationsJson });
        }),
      emit: (kind, detailJson) => page.send("emit", { event: kind, detail: detailJson }),
    };
    const entry = pyodide.pyimport("webmcp_a2a.browser.worker");
    self.agent = await entry.start(JSON.stringify(config), bridge, page.uplink());
    entry.destroy();
    progress("router");
    page.send("started");
  } catch (error) {
    page.send("failed", { message: String(error?.message ?? error) });
  }
});

page.on("tool-registered", ({ name, error }) => {
  const registration = registrations.get(name);
  registrations.delete(name);
  if (error) registration?.reject(new Error(error));
  else registration?.resolve();
});

page.on("call", async ({ id, name, args }) => {
  const handler = handlers.get(name);
  const result = handler
    ? await runPythonTool(handler, args)
    : JSON.stringify({ isError: true, content: [{ type: "text", text: `no tool ${name} in this worker` }] });
  page.send("call-result", { id, result });
});
