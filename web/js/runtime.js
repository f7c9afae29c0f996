/**
 * Load the Python runtime: Pyodide + pydantic + the project's package. Shared by the page's main
 * thread (boot.js) and the agent worker (worker.js), so both load exactly the same thing.
 *
 * Everything comes from the page's own server: Pyodide and the wheels from /static (a pinned,
 * hash-checked copy), the project's Python from /py/webmcp_a2a.zip (zipped per request, so an
 * edit under py/ shows on reload). The slow steps run side by side.
 */

export const PYODIDE_URL = "/static/pyodide/";
export const WHEELS_LOCK = "/static/wheels/pyodide-lock.json";
export const PACKAGE_ZIP = "/py/webmcp_a2a.zip";
export const PACKAGE_DIR = "/home/pyodide/app";

/** Pyodide with pydantic loaded and the project's package importable. */
export async function startPython() {
  const [pyodide, packageZip] = await Promise.all([loadPythonRuntime(), fetchPackage()]);
  pyodide.unpackArchive(packageZip, "zip", { extractDir: PACKAGE_DIR });
  pyodide.runPython(`import sys; sys.path.insert(0, "${PACKAGE_DIR}")`);
  return pyodide;
}

export async function loadPythonRuntime() {
  const { loadPyodide } = await import(`${PYODIDE_URL}pyodide.mjs`);
  // location is the page's, or the worker script's: both are on the page's origin.
  const pyodide = await loadPyodide({ indexURL: PYODIDE_URL, lockFileURL: new URL(WHEELS_LOCK, location.href).href });
  const failures = [];
  // loadPackage reports a failure through errorCallback, not by throwing.
  await pyodide.loadPackage(["pydantic"], { errorCallback: (message) => failures.push(message) });
  if (failures.length) throw new Error(`Could not load pydantic: ${failures.join("; ")}`);
  return pyodide;
}

export async function fetchPackage() {
  const response = await fetch(PACKAGE_ZIP);
  if (!response.ok) throw new Error(`${PACKAGE_ZIP}: HTTP ${response.status}`);
  return response.arrayBuffer();
}
