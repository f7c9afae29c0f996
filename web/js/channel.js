/**
 * The page's postMessage layer: one small, checked way for an agent's runtime (a Web Worker, a
 * same-origin iframe, or the page's own main thread) and the page that hosts it to talk.
 *
 * A Channel carries plain messages `{a2a: MARK, kind, ...fields}`:
 * - `Channel.overPort(port)`: a dedicated Worker, the worker's own global scope, or a MessagePort.
 *   Nobody but the two ends can post on it; the shape of every message is still checked.
 * - `Channel.toWindow(win)`: another window (the iframe's parent, or an iframe's contentWindow).
 *   Sending always names the target origin - this page's own (`location.origin`), never "*": a
 *   window that navigated elsewhere receives nothing. Receiving goes through one `message`
 *   listener that checks, in order, `event.origin` (must be this page's origin), `event.source`
 *   (must be a window this page opened a channel to) and the message's shape (MARK, a known kind,
 *   the kind's fields with the right types). Anything else is dropped - never acted on - and
 *   counted in `drops` (shown by the pages, read by tests).
 * - `Channel.pair()`: two ends in the same realm (the page's main-thread agent and its hub), with
 *   the same asynchronous, structured-clone semantics as postMessage.
 *
 * Comlink-like in spirit, deliberately smaller: messages, not proxies, because every message is
 * checked and the Python side speaks JSON strings (see `uplink()`).
 */

export const MARK = "webmcp-a2a/1";

// Every kind and the fields it must carry ("?" marks an optional field).
const SHAPES = {
  // agent runtime -> the hub of the page hosting it
  hello: { agent_id: "string", where: "string" },
  status: { status: "object" },
  attach: {},
  frame: { frame: "string" },
  detach: {},
  "local-send": { frame: "string" },
  "local-ack": { message_id: "string", accepted: "boolean", "reason?": "string" },
  bye: {},
  // hub -> agent runtime
  peers: { ids: "array" },
  open: {},
  closed: { code: "number", reason: "string" },
  "local-deliver": { frame: "string" },
  "local-result": { frame: "string" },
  "local-miss": { frame: "string" },
  // page <-> its agent worker
  start: { config: "object" },
  started: {},
  failed: { message: "string" },
  tool: { name: "string", title: "string", description: "string", inputSchema: "string", annotations: "string" },
  "tool-registered": { name: "string", "error?": "string" },
  call: { id: "number", name: "string", args: "string" },
  "call-result": { id: "number", result: "string" },
  emit: { event: "string", detail: "string" },
};

/** Messages dropped by this document's channels, by reason; `last` describes the latest. */
export const drops = {
  foreign_origin: 0,
  unknown_source: 0,
  malformed: 0,
  last: null,
  listeners: new Set(),
  get total() {
    return this.foreign_origin + this.unknown_source + this.malformed;
  },
};

function drop(reason, origin, data) {
  drops[reason] += 1;
  drops.last = { reason, origin, kind: typeof data?.kind === "string" ? data.kind.slice(0, 40) : null };
  for (const listener of drops.listeners) listener(drops);
}

export function wellFormed(data) {
  if (typeof data !== "object" || data === null || data.a2a !== MARK || typeof data.kind !== "string") return false;
  const shape = Object.hasOwn(SHAPES, data.kind) ? SHAPES[data.kind] : null;
  if (!shape) return false;
  for (const [key, type] of Object.entries(shape)) {
    const optional = key.endsWith("?");
    const name = optional ? key.slice(0, -1) : key;
    const value = data[name];
    if (value === undefined || value === null) {
      if (optional) continue;
      return false;
    }
    const actual = Array.isArray(value) ? "array" : typeof value;
    if (actual !== type) return false;
  }
  return true;
}

const windowChannels = new Map(); // WindowProxy -> Channel
let listeningToWindows = false;

function listenToWindows() {
  if (listeningToWindows) return;
  listeningToWindows = true;
  window.addEventListener("message", (event) => {
    // Same origin only: another origin's message is never even looked at.
    if (event.origin !== location.origin) return drop("foreign_origin", event.origin, null);
    const channel = windowChannels.get(event.source);
    if (!channel) {
      // Other same-origin scripts may use postMessage for their own ends: only ours are counted.
      if (event.data?.a2a === MARK) drop("unknown_source", event.origin, event.data);
      return;
    }
    channel.receive(event.data, event.origin);
  });
}

export class Channel {
  #post;
  #handlers = new Map(); // kind -> Set(handler)
  #any = new Set();
  #closed = false;

  constructor(post, label) {
    this.#post = post;
    this.label = label;
  }

  /** A channel over a Worker, a worker's global scope (`self`) or a MessagePort. */
  static overPort(port, label = "port") {
    const channel = new Channel((message) => port.postMessage(message), label);
    port.addEventListener("message", (event) => channel.receive(event.data, "port"));
    port.start?.(); // a MessagePort listened to with addEventListener needs it
    return channel;
  }

  /** A channel to another window of this origin (the parent, or an iframe's contentWindow). */
  static toWindow(target, label = "window") {
    listenToWindows();
    const channel = new Channel((message) => target.postMessage(message, location.origin), label);
    windowChannels.set(target, channel);
    channel.onClose(() => windowChannels.get(target) === channel && windowChannels.delete(target));
    return channel;
  }

  /** Two connected ends in this realm, delivering like postMessage (later, and a structured clone). */
  static pair(labelA = "a", labelB = "b") {
    let a = null;
    let b = null;
    const deliver = (to) => (message) => {
      const copy = structuredClone(message);
      setTimeout(() => to.receive(copy, location.origin));
    };
    a = new Channel((message) => deliver(b)(message), labelA);
    b = new Channel((message) => deliver(a)(message), labelB);
    return [a, b];
  }

  send(kind, fields = {}) {
    if (this.#closed) return;
    this.#post({ ...fields, a2a: MARK, kind });
  }

  /** Call `handler(message)` for every well-formed message of `kind` (or of any kind: "*"). */
  on(kind, handler) {
    const set = kind === "*" ? this.#any : (this.#handlers.get(kind) ?? this.#handlers.set(kind, new Set()).get(kind));
    set.add(handler);
    return () => set.delete(handler);
  }

  receive(data, origin) {
    if (this.#closed) return;
    if (!wellFormed(data)) return drop("malformed", origin, data);
    for (const handler of this.#handlers.get(data.kind) ?? []) handler(data);
    for (const handler of this.#any) handler(data);
  }

  onClose(handler) {
    this.on("__close", handler);
  }

  close() {
    if (this.#closed) return;
    for (const handler of this.#handlers.get("__close") ?? []) handler();
    this.#closed = true;
    this.#handlers.clear();
    this.#any.clear();
  }

  /**
   * The Python side's view of this channel: `post(json)` and `listen(callback)`, JSON strings
   * both ways (the cheapest way across the JavaScript/Python border, and no proxies to leak).
   */
  uplink(kinds = HUB_TO_AGENT) {
    return {
      post: (text) => {
        const { kind, ...fields } = JSON.parse(text);
        this.send(kind, fields);
      },
      listen: (callback) => {
        for (const kind of kinds) this.on(kind, ({ a2a, ...message }) => callback(JSON.stringify(message)));
      },
    };
  }
}

/** What a hub says to the agent runtimes it hosts (all an agent's Python listens to). */
export const HUB_TO_AGENT = ["peers", "open", "closed", "frame", "local-deliver", "local-result", "local-miss"];
