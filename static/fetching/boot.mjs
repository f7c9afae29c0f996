/**
 * Build the page's fast start-up from the vendored runtime: `node static/fetching/boot.mjs`
 * (the Makefile's `assets` target runs it after fetch.py). Writes static/boot/:
 *
 * - `pyodide.snapshot`: a memory snapshot of this Pyodide with the standard-library modules the
 *   agent imports already imported (Pyodide ships the stdlib as sources in a zip, so each import
 *   compiles). `loadPyodide({_loadSnapshot})` restores it instead of starting Python afresh.
 *   Pyodide's snapshots must be taken before any `loadPackage`, so pydantic is not in it.
 * - `pyc.zip`: bytecode for the wheels' modules and py/webmcp_a2a's that the page imports, compiled by this same
 *   Pyodide as checked-hash .pyc (PEP 552) at the paths the page installs them to. Python uses a
 *   .pyc only while its source's hash matches, so an edit under py/ just compiles as before.
 * - `manifest.json`: what was built, from what.
 *
 * Both files are an optimisation: the page boots the ordinary way when they are missing or do
 * not fit its Pyodide (web/js/runtime.js). Nothing here is downloaded; Node is the only need.
 */

import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { PACKAGE_DIR } from "../../web/js/runtime.js"; // where the page unpacks the package

const STATIC = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PROJECT = resolve(STATIC, "..");
const PYODIDE_DIR = join(STATIC, "pyodide/");
const WHEELS_LOCK = join(STATIC, "wheels/pyodide-lock.json");
const OUT = join(STATIC, "boot");

// What the page imports on its way to ready: the agent (page or worker), the tools' schemas.
const SURVEY = `
import sys, importlib
for name in ("webmcp_a2a.browser.page", "webmcp_a2a.browser.worker"):
    importlib.import_module(name)
from webmcp_a2a.browser.tools import TOOLS
for tool in TOOLS:
    tool.input_schema()
site = next(path for path in sys.path if path.endswith("site-packages"))
stdlib_zip = next(path for path in sys.path if path.endswith(".zip"))
stdlib = sorted(
    name for name, module in list(sys.modules.items())
    if (getattr(module, "__file__", None) or "").startswith(stdlib_zip + "/")
    and not name.startswith(("_pyodide", "pyodide"))
    and all(part.isidentifier() for part in name.split("."))
)
`;

const COMPILE = `
import io, py_compile, zipfile
bundle = io.BytesIO()
sources = sorted(
    module.__file__ for module in list(sys.modules.values())
    if (getattr(module, "__file__", None) or "").startswith((site + "/", "${PACKAGE_DIR}/"))
    and module.__file__.endswith(".py")
)
with zipfile.ZipFile(bundle, "w", zipfile.ZIP_STORED) as archive:
    for source in sources:
        py_compile.compile(source, cfile="/tmp/out.pyc", doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        with open("/tmp/out.pyc", "rb") as pyc:
            archive.writestr(importlib.util.cache_from_source(source).lstrip("/"), pyc.read())
pyc_zip = bundle.getvalue()
count = len(sources)
`;

async function loadRuntime(options = {}) {
  const { loadPyodide } = await import(join(PYODIDE_DIR, "pyodide.mjs"));
  return loadPyodide({ indexURL: PYODIDE_DIR, lockFileURL: WHEELS_LOCK, stdout: () => {}, ...options });
}

/** Import what the page imports (from py/ on disk); return the stdlib modules it pulled in and the .pyc zip. */
async function surveyAndCompile() {
  const pyodide = await loadRuntime();
  await pyodide.loadPackage(["pydantic"], { messageCallback: () => {} });
  pyodide.FS.mkdirTree(PACKAGE_DIR);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: join(PROJECT, "py") }, PACKAGE_DIR);
  pyodide.runPython(`import sys; sys.path.insert(0, "${PACKAGE_DIR}"); sys.dont_write_bytecode = True`);
  // The browser transport imports the page's WebSocket class; Node 20 has none, and none is used here.
  globalThis.WebSocket ??= class WebSocket {};
  pyodide.runPython(SURVEY);
  pyodide.runPython(COMPILE);
  const globals = pyodide.globals;
  return {
    stdlib: globals.get("stdlib").toJs(),
    pycZip: globals.get("pyc_zip").toJs(),
    pycCount: globals.get("count"),
  };
}

async function snapshot(modules) {
  const pyodide = await loadRuntime({ _makeSnapshot: true });
  pyodide.runPython(`import ${modules.join(", ")}`);
  return { bytes: pyodide.makeMemorySnapshot(), version: pyodide.version };
}

function writeAtomic(path, bytes) {
  writeFileSync(`${path}.tmp`, bytes);
  renameSync(`${path}.tmp`, path);
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

async function main() {
  const started = performance.now();
  mkdirSync(OUT, { recursive: true });
  const { stdlib, pycZip, pycCount } = await surveyAndCompile();
  const { bytes, version } = await snapshot(stdlib);
  writeAtomic(join(OUT, "pyc.zip"), pycZip);
  writeAtomic(join(OUT, "pyodide.snapshot"), bytes);
  writeAtomic(
    join(OUT, "manifest.json"),
    `${JSON.stringify(
      {
        note: "Built by `node static/fetching/boot.mjs` from the vendored runtime; never committed.",
        pyodide: version,
        inputs: {
          "pyodide/pyodide.asm.wasm": sha256(join(PYODIDE_DIR, "pyodide.asm.wasm")),
          "pyodide/python_stdlib.zip": sha256(join(PYODIDE_DIR, "python_stdlib.zip")),
          "wheels/pyodide-lock.json": sha256(WHEELS_LOCK),
        },
        snapshot: { bytes: bytes.length, stdlib_modules: stdlib },
        pyc: { bytes: pycZip.length, modules: pycCount },
      },
      null,
      2,
    )}\n`,
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `boot.mjs: static/boot/pyodide.snapshot (${(bytes.length / 2 ** 20).toFixed(1)} MiB, ${stdlib.length} stdlib modules) ` +
      `and pyc.zip (${pycCount} modules) in ${seconds}s`,
  );
}

// One line on failure: Node would otherwise print the line of minified Pyodide it was thrown from.
main().catch((error) => {
  console.error(`boot.mjs: failed: ${error?.message ?? error}`);
  process.exit(1);
});
