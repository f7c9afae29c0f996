/**
 * Boot a Python agent in this page: WebMCP context, Pyodide + pydantic, the project's package, start.
 *
 * Everything comes from the page's own server: Pyodide and the wheels from /static (a pinned,
 * hash-checked copy), the project's Python from /py/webmcp_a2a.zip (zipped per request, so an
 * edit under py/ shows on reload). The slow steps run side by side.
 *
 * Resolves to `{pyodide, agent, native}`; `agent` is the Python PageAgent (a PyProxy).
 * Emits `a2a:*` CustomEvents on window: `state`, `message`, `tool` (every tool call and its result).
 */

import { installModelContext, registerTool } from "./webmcp.js";

const PYODIDE_URL = "/static/pyodide/";
const WHEELS_LOCK = "/static/wheels/pyodide-lock.json";
const PACKAGE_ZIP = "/py/webmcp_a2a.zip";
const PACKAGE_DIR = "/home/pyodide/app";

export function pageConfig(params = new URLSearchParams(location.search)) {
  const region = params.get("region")?.split(",").map(Number);
  return {
    agent_id: params.get("agent_id") || sessionAgentId(),
    agent_type: params.get("agent_type") || "executor",
    capabilities: params.get("capabilities")?.split(",").filter(Boolean) ?? [],
    region: region?.length === 4 ? { x: region[0], y: region[1], width: region[2], height: region[3] } : null,
    router_url: params.get("router") || `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/a2a`,
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

export function emit(kind, detail) {
  window.dispatchEvent(new CustomEvent(`a2a:${kind}`, { detail }));
}

export async function boot(config = pageConfig()) {
  performance.mark("a2a:boot");
  const [{ context, native }, pyodide, packageZip] = await Promise.all([
    installModelContext(),
    loadPythonRuntime(),
    fetch(PACKAGE_ZIP).then((response) => {
      if (!response.ok) throw new Error(`${PACKAGE_ZIP}: HTTP ${response.status}`);
      return response.arrayBuffer();
    }),
  ]);
  pyodide.unpackArchive(packageZip, "zip", { extractDir: PACKAGE_DIR });
  pyodide.runPython(`import sys; sys.path.insert(0, "${PACKAGE_DIR}")`);
  performance.mark("a2a:python-ready");

  const bridge = {
    registerTool: (name, title, description, schemaJson, annotationsJson, handler) =>
      registerTool(context, {
        name,
        title,
        description,
        inputSchema: JSON.parse(schemaJson),
        annotations: JSON.parse(annotationsJson),
        execute: async (input) => {
          const result = JSON.parse(await handler(JSON.stringify(input ?? {})));
          emit("tool", { name, arguments: input ?? {}, result });
          return result;
        },
      }),
    emit: (kind, detailJson) => emit(kind, JSON.parse(detailJson)),
  };
  const page = pyodide.pyimport("webmcp_a2a.browser.page");
  const agent = await page.start(JSON.stringify(config), bridge);
  page.destroy();
  performance.mark("a2a:tools-registered");
  return { pyodide, agent, native, context };
}

async function loadPythonRuntime() {
  const { loadPyodide } = await import(`${PYODIDE_URL}pyodide.mjs`);
  const pyodide = await loadPyodide({ indexURL: PYODIDE_URL, lockFileURL: new URL(WHEELS_LOCK, location.href).href });
  const failures = [];
  // loadPackage reports a failure through errorCallback, not by throwing.
  await pyodide.loadPackage(["pydantic"], { errorCallback: (message) => failures.push(message) });
  if (failures.length) throw new Error(`Could not load pydantic: ${failures.join("; ")}`);
  return pyodide;
}
