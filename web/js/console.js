/**
 * The test page's tool console: a form generated from each tool's input JSON Schema (enums as
 * selects, numbers with their bounds, nested objects as fieldsets, defaults filled in, free-form
 * objects as JSON), the same arguments as JSON, the result as structured JSON and as the text an AI
 * agent sees, and a history of calls to replay or edit. Calls go through
 * `navigator.modelContext.callTool`, the path an AI agent uses.
 */

const HISTORY_LIMIT = 50;

export class ToolConsole {
  #tools = [];
  #examples;
  #elements;
  #form = null; // the generated form of the chosen tool: {element, read()}
  #history = [];

  /** `elements`: {name, description, fields, json, modes, form, result, text, history} (DOM nodes). */
  constructor(elements, examples = {}) {
    this.#elements = elements;
    this.#examples = examples;
    elements.name.addEventListener("change", () => this.choose(elements.name.value));
    elements.modes.addEventListener("change", () => this.#switchMode());
    elements.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.#callFromForm();
    });
    elements.history.addEventListener("click", (event) => this.#fromHistory(event));
  }

  showTools(tools) {
    this.#tools = tools;
    this.#elements.name.replaceChildren(...tools.map(({ name }) => new Option(name, name)));
    if (tools.length) this.choose(tools[0].name);
  }

  /** Show `name`'s form, filled with `args` (default: the tool's example, then its schema's defaults). */
  choose(name, args = this.#examples[name] ?? {}) {
    const tool = this.#tools.find((candidate) => candidate.name === name);
    if (!tool) return;
    this.#elements.name.value = name;
    this.#elements.description.textContent = tool.description ?? "";
    this.#form = field(tool.inputSchema ?? { type: "object" }, tool.inputSchema, "", args, true);
    this.#elements.fields.replaceChildren(this.#form.element);
    this.#elements.json.value = JSON.stringify(args, null, 2);
  }

  get mode() {
    return this.#elements.modes.querySelector("input:checked")?.value ?? "form";
  }

  /** The arguments as the form (or the JSON box) has them; throws naming the field that is wrong. */
  arguments() {
    if (this.mode === "json") {
      try {
        return JSON.parse(this.#elements.json.value || "{}");
      } catch (error) {
        throw new Error(`The arguments are not JSON: ${error.message}`);
      }
    }
    return this.#form?.read() ?? {};
  }

  async call(name, args) {
    const { result: resultBox, text: textBox } = this.#elements;
    resultBox.textContent = "…";
    textBox.textContent = "";
    let result;
    try {
      result = await navigator.modelContext.callTool(name, args);
    } catch (error) {
      result = { isError: true, content: [{ type: "text", text: String(error?.message ?? error) }] };
    }
    const failed = Boolean(result?.isError);
    resultBox.textContent = JSON.stringify(result?.structuredContent ?? result, null, 2);
    textBox.textContent = (result?.content ?? []).map((part) => part.text ?? "").join("\n");
    for (const box of [resultBox, textBox]) box.classList.toggle("is-error", failed);
    this.#remember(name, args, failed);
    return result;
  }

  #callFromForm() {
    let args;
    try {
      args = this.arguments();
    } catch (error) {
      this.#elements.result.textContent = error.message;
      this.#elements.result.classList.add("is-error");
      this.#elements.text.textContent = "";
      return;
    }
    this.call(this.#elements.name.value, args);
  }

  #switchMode() {
    const json = this.mode === "json";
    if (json) this.#elements.json.value = JSON.stringify(this.#form?.read() ?? {}, null, 2);
    else {
      try {
        this.choose(this.#elements.name.value, JSON.parse(this.#elements.json.value || "{}"));
      } catch {
        // Not JSON (yet): the form keeps what it had.
      }
    }
    this.#elements.json.hidden = !json;
    this.#elements.fields.hidden = json;
  }

  #remember(name, args, failed) {
    this.#history.unshift({ name, args, failed, at: new Date() });
    this.#history.length = Math.min(this.#history.length, HISTORY_LIMIT);
    this.#elements.history.replaceChildren(
      ...this.#history.map((entry, index) => {
        const item = document.createElement("li");
        item.className = entry.failed ? "is-error" : "";
        item.innerHTML = `<time></time> <code></code> <span></span>
          <button type="button" data-replay="${index}">Replay</button>
          <button type="button" data-edit="${index}">Edit</button>`;
        item.querySelector("time").textContent = entry.at.toLocaleTimeString([], { hour12: false });
        item.querySelector("code").textContent = entry.name;
        item.querySelector("span").textContent = JSON.stringify(entry.args);
        return item;
      }),
    );
  }

  #fromHistory(event) {
    const { replay, edit } = event.target.dataset ?? {};
    const entry = this.#history[Number(replay ?? edit)];
    if (!entry) return;
    if (replay !== undefined) this.call(entry.name, entry.args);
    else this.choose(entry.name, entry.args);
  }
}

// --- the form generated from a JSON Schema -------------------------------------------------------

/** `{element, read()}` for `schema` (of the value at `path`); read() gives undefined for "not set". */
function field(schema, root, path, value, required) {
  const { node, nullable } = resolve(schema, root);
  const label = node.title ?? schema.title ?? path.split(".").pop();
  const optional = nullable || !required;
  if (node.type === "object" && node.properties) return objectField(node, root, path, value, label, optional, schema);
  const control = controlFor(node, value ?? (schema.default === null ? undefined : schema.default), optional);
  control.name = path;
  control.dataset.field = path;
  if (!path) return { element: control, read: () => readControl(control, node, path) };
  const element = document.createElement("label");
  element.className = "field";
  element.append(`${label}${optional ? "" : " *"} `, control);
  const hint = schema.description ?? node.description;
  if (hint) element.title = hint;
  return { element, read: () => readControl(control, node, path) };
}

function objectField(node, root, path, value, label, optional, schema) {
  const element = document.createElement(path ? "fieldset" : "div");
  element.className = "fields";
  const required = new Set(node.required ?? []);
  const children = Object.entries(node.properties).map(([name, child]) => [
    name,
    field(child, root, path ? `${path}.${name}` : name, value?.[name], required.has(name)),
  ]);
  let include = null;
  if (path) {
    const legend = document.createElement("legend");
    legend.textContent = label;
    if (optional) {
      // An optional object is sent only when asked for.
      include = document.createElement("input");
      include.type = "checkbox";
      include.checked = value !== undefined && value !== null;
      include.dataset.include = path;
      legend.prepend(include, " ");
    }
    element.append(legend);
    const hint = schema.description ?? node.description;
    if (hint) element.title = hint;
  }
  element.append(...children.map(([, child]) => child.element));
  return {
    element,
    read() {
      if (include && !include.checked) return undefined;
      const result = {};
      for (const [name, child] of children) {
        const childValue = child.read();
        if (childValue !== undefined) result[name] = childValue;
      }
      return result;
    },
  };
}

/** The schema itself, through a `$ref` and an `anyOf` with `null` (pydantic's optional fields). */
function resolve(schema, root) {
  let node = schema;
  let nullable = false;
  if (Array.isArray(node.anyOf)) {
    const others = node.anyOf.filter((option) => option.type !== "null");
    nullable = others.length < node.anyOf.length;
    if (others.length === 1) node = others[0];
  }
  if (node.$ref?.startsWith("#/$defs/")) node = root?.$defs?.[node.$ref.slice("#/$defs/".length)] ?? {};
  return { node, nullable };
}

function controlFor(node, value, optional) {
  if (Array.isArray(node.enum)) {
    const select = document.createElement("select");
    if (optional) select.append(new Option("(not set)", ""));
    select.append(...node.enum.map((option) => new Option(String(option), JSON.stringify(option))));
    select.value = value === undefined ? (optional ? "" : JSON.stringify(node.enum[0])) : JSON.stringify(value);
    return select;
  }
  if (node.type === "boolean") {
    const select = document.createElement("select"); // three states when optional: not set, true, false
    if (optional) select.append(new Option("(not set)", ""));
    select.append(new Option("true", "true"), new Option("false", "false"));
    select.value = value === undefined ? (optional ? "" : "false") : String(value);
    return select;
  }
  if (node.type === "integer" || node.type === "number") {
    const input = document.createElement("input");
    input.type = "number";
    input.step = node.type === "integer" ? "1" : "any";
    if (node.minimum !== undefined) input.min = node.minimum;
    if (node.maximum !== undefined) input.max = node.maximum;
    if (value !== undefined) input.value = value;
    return input;
  }
  if (node.type === "string") {
    const input = document.createElement("input");
    input.type = "text";
    if (node.maxLength) input.maxLength = node.maxLength;
    if (value !== undefined) input.value = value;
    return input;
  }
  // Free-form objects, arrays, anything else: JSON.
  const area = document.createElement("textarea");
  area.rows = 3;
  area.spellcheck = false;
  area.dataset.json = "true";
  if (value !== undefined) area.value = JSON.stringify(value, null, 2);
  return area;
}

function readControl(control, node, path) {
  const raw = control.value;
  if (raw === "") return undefined;
  if (control.tagName === "SELECT") return JSON.parse(raw);
  if (control.dataset.json) {
    try {
      return JSON.parse(raw);
    } catch (error) {
      throw new Error(`${path || "arguments"}: not JSON (${error.message})`);
    }
  }
  if (node.type === "integer" || node.type === "number") return Number(raw);
  return raw;
}
