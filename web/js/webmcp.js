/**
 * WebMCP adapter: one way for the page to expose tools, whichever WebMCP the browser has.
 *
 * Three shapes meet here:
 * - Native (Chromium with the WebMCP feature): `document.modelContext` with
 *   `registerTool(tool, {signal})`, `getTools()`, `executeTool(tool, inputObject)` resolving to
 *   a JSON string, and a `toolchange` event. Unregistering means aborting the signal.
 * - Polyfill (`@mcp-b/webmcp-polyfill`, loaded only when native is absent): the same current
 *   shape on `document.modelContext`, except that `executeTool` takes the input as a JSON string.
 * - Older drafts (2025 to early 2026, MCP-B 2.x, early design documents): `navigator.modelContext`
 *   with `registerTool` / `unregisterTool(name)` / `provideContext` / `clearContext` and calls by
 *   tool name. Agents and scripts written against them still exist, so `navigator.modelContext`
 *   is always a facade over the current context that behaves the same over native and polyfill.
 */

const POLYFILL_URL = "/static/vendor/webmcp-polyfill/index.iife.js";

/** Use the browser's `document.modelContext`, or install the polyfill; then the facade. */
export async function installModelContext({ polyfillURL = POLYFILL_URL } = {}) {
  if (!document.modelContext) await loadScript(polyfillURL);
  const context = document.modelContext;
  if (!context) {
    // The polyfill declines to install outside a secure context (http://127.0.0.1 is secure).
    throw new Error(
      `The WebMCP polyfill from ${polyfillURL} did not install document.modelContext` +
        (isSecureContext ? "" : ": the page is not a secure context"),
    );
  }
  // Read from the context, not from whether this function loaded the script, so a polyfill the
  // page loaded itself is not taken for the native API (they disagree on executeTool's input type).
  const native = !context.__isWebMCPPolyfill;
  // Installing twice must not drop the tools the first facade knows how to unregister.
  // Read the descriptor, not the property: the polyfill's alias getter logs a deprecation warning.
  if (!(Object.getOwnPropertyDescriptor(navigator, "modelContext")?.value instanceof ModelContextFacade)) {
    Object.defineProperty(navigator, "modelContext", {
      configurable: true,
      enumerable: true,
      value: new ModelContextFacade(context, native),
    });
  }
  return { context, native };
}

/** Register `tool` on `context`; resolves to a function that unregisters it. */
export async function registerTool(context, { name, title, description, inputSchema, annotations, execute }) {
  const registration = new AbortController();
  await context.registerTool(
    { name, title, description, inputSchema, annotations, execute },
    { signal: registration.signal },
  );
  return () => registration.abort();
}

/** `navigator.modelContext` as older drafts define it, over a current `document.modelContext`. */
class ModelContextFacade {
  #context;
  #native;
  #unregisters = new Map(); // tool name -> unregister(), for tools registered through the facade
  // This window's tools as getTools() last gave them (a call costs more than a small tool's whole
  // run), until they change (a registration dispatches toolchange before it resolves).
  #tools = null;

  constructor(context, native) {
    this.#context = context;
    this.#native = native;
    context.addEventListener("toolchange", () => {
      this.#tools = null;
    });
  }

  async registerTool(tool) {
    this.#unregisters.set(tool.name, await registerTool(this.#context, tool));
  }

  // Only tools registered through the facade: the signals of the others belong to their owners.
  unregisterTool(name) {
    this.#unregisters.get(name)?.();
    this.#unregisters.delete(name);
    this.#tools = null; // an aborted registration's toolchange comes later
  }

  async provideContext({ tools = [] } = {}) {
    this.clearContext();
    for (const tool of tools) await this.registerTool(tool);
  }

  clearContext() {
    for (const name of [...this.#unregisters.keys()]) this.unregisterTool(name);
  }

  async listTools() {
    const tools = await this.#ownTools();
    return tools.map(({ name, title, description, inputSchema }) => ({ name, title, description, inputSchema }));
  }

  async callTool(name, args = {}) {
    const tools = await this.#ownTools();
    const tool = tools.find((candidate) => candidate.name === name);
    if (!tool) {
      const available = tools.map((candidate) => candidate.name).join(", ") || "none";
      throw new Error(`No WebMCP tool named "${name}". Available tools: ${available}.`);
    }
    let result;
    try {
      result = await this.#context.executeTool(tool, this.#native ? args : JSON.stringify(args));
    } catch (error) {
      // The browser reports a throwing execute() without the tool's name: add it.
      throw new Error(`WebMCP tool "${name}" failed: ${error.message}`, { cause: error });
    }
    return parseResult(result);
  }

  executeTool(name, args) {
    return this.callTool(name, args);
  }

  getTools(options) {
    return this.#context.getTools(options);
  }

  addEventListener(...args) {
    this.#context.addEventListener(...args);
  }

  removeEventListener(...args) {
    this.#context.removeEventListener(...args);
  }

  // Native getTools() also lists the tools of same-origin iframes, the polyfill cannot: keeping to
  // this window's tools makes the facade behave the same over both (and matches page.webmcp).
  #ownTools() {
    this.#tools ??= this.#context.getTools().then((tools) => tools.filter((tool) => tool.window === window));
    return this.#tools;
  }
}

// executeTool hands back JSON for an object result and String(value) for anything else.
function parseResult(text) {
  if (text === "undefined") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function loadScript(url) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = url;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`Could not load the WebMCP polyfill from ${url}`));
    document.head.append(script);
  });
}
