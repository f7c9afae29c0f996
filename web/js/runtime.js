/**
 * Load the Python runtime: Pyodide + pydantic + the project's package. Shared by the page's main
 * thread (boot.js) and the agent worker (worker.js), so both load exactly the same thing.
 *
 * Everything comes from the page's own server: Pyodide and the wheels from /static (a pinned,
 * hash-checked copy), the project's Python from /py/webmcp_a2a.zip (zipped per request, so an
 * edit under py/ shows on reload). The slow steps run side by side.
 *
 * The fast start-up, when `static/fetching/boot.mjs` has built it (static/boot/): Pyodide restored
 * from a memory snapshot with the standard library the agent uses already imported, and bytecode
 * for pydantic and the package. Without it, or when this Pyodide refuses the snapshot, Python
 * starts the ordinary way; the `boot` that startPython() returns says which way it went and why.
 */

export const PYODIDE_URL = "/static/pyodide/";
export const WHEELS_LOCK = "/static/wheels/pyodide-lock.json";
export const PACKAGE_ZIP = "/py/webmcp_a2a.zip";
export const PACKAGE_DIR = "/home/pyodide/app";
export const SNAPSHOT = "/static/boot/pyodide.snapshot";
export const BYTECODE_ZIP = "/static/boot/pyc.zip";

/**
 * The phases of a start-up, in order (the test page shows them). startPython() reports the first
 * three through `report(phase, detail)` (`download` with `{loaded, total}` bytes); its callers the rest.
 */
export const PHASES = ["download", "python", "packages", "agent", "router", "ready"];

/** `{pyodide, boot}`: Pyodide with pydantic loaded and the package importable, and how it started. */
export async function startPython(report = () => {}) {
  report("download", { loaded: 0, total: 0 });
  const downloads = new Downloads(report);
  const bytecode = downloads.fetch(BYTECODE_ZIP).catch(() => null);
  const [{ pyodide, boot }, packageZip] = await Promise.all([
    loadPythonRuntime(downloads, report),
    downloads.fetch(PACKAGE_ZIP),
  ]);
  // Bytecode first: its .pyc are checked-hash, used only while they match the sources beside them.
  const pyc = await bytecode;
  if (pyc) pyodide.unpackArchive(pyc, "zip", { extractDir: "/" });
  pyodide.unpackArchive(packageZip, "zip", { extractDir: PACKAGE_DIR });
  // A restored snapshot would give every page the same random numbers: draw a fresh seed.
  pyodide.runPython(`import random, sys; random.seed(); sys.path.insert(0, "${PACKAGE_DIR}")`);
  return { pyodide, boot: { ...boot, bytecode: pyc ? "used" : "not found" } };
}

async function loadPythonRuntime(downloads, report) {
  const snapshot = downloads.fetch(SNAPSHOT);
  // Had or not (looked at below), Python starts once it is settled; never an unhandled rejection.
  snapshot.then(
    () => report("python"),
    () => report("python"),
  );
  const { loadPyodide } = await import(`${PYODIDE_URL}pyodide.mjs`);
  // location is the page's, or the worker script's: both are on the page's origin.
  const options = { indexURL: PYODIDE_URL, lockFileURL: new URL(WHEELS_LOCK, location.href).href };
  let pyodide;
  let boot;
  try {
    pyodide = await loadPyodide({ ...options, _loadSnapshot: snapshot });
    boot = { snapshot: "restored" };
  } catch (error) {
    // Missing, or built for another Pyodide (its build id is checked): start afresh.
    boot = { snapshot: `not used: ${error?.message ?? error}`.split("\n")[0] };
    pyodide = await loadPyodide(options);
  }
  // Pyodide copies a snapshot into its own memory (a refused one is of no use), yet its configuration
  // keeps the promise of it: free those 30 MB (transfer(0) detaches the buffer and lets its bytes go).
  snapshot.then(
    (bytes) => bytes.transfer(0),
    () => {},
  );
  report("packages");
  const failures = [];
  // loadPackage reports a failure through errorCallback, not by throwing.
  await pyodide.loadPackage(["pydantic"], { errorCallback: (message) => failures.push(message) });
  if (failures.length) throw new Error(`Could not load pydantic: ${failures.join("; ")}`);
  return { pyodide, boot };
}

/**
 * Call a Python tool handler (py/webmcp_a2a/browser/page.py): it answers at once with the result's
 * JSON when the call did not have to wait, else with a proxy of the task still working on it.
 */
export async function runPythonTool(handler, argumentsJson) {
  const answer = handler(argumentsJson);
  if (typeof answer === "string") return answer;
  try {
    return await answer;
  } finally {
    answer.destroy();
  }
}

/** The start-up's own fetches, with their bytes counted as they arrive (a few reports a second). */
class Downloads {
  #report;
  #loaded = 0;
  #total = 0;
  #reported = 0;

  constructor(report) {
    this.#report = report;
  }

  async fetch(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const length = Number(response.headers.get("content-length"));
    if (!length) return response.arrayBuffer(); // not counted: its size is not known ahead
    this.#total += length;
    const bytes = new Uint8Array(length); // filled as it arrives: one copy, as arrayBuffer() makes
    let offset = 0;
    for await (const chunk of response.body) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
      this.#loaded += chunk.byteLength;
      if (performance.now() - this.#reported > 100) {
        this.#reported = performance.now();
        this.#report("download", { loaded: this.#loaded, total: this.#total });
      }
    }
    return bytes.buffer;
  }
}
