/**
 * The page's hub: the agents this page hosts (its main-thread agent, its worker, its iframes),
 * the relay for those whose own WebSocket cannot be used, and local routing between them.
 *
 * Relay. An agent runtime whose WebSocket fails says `attach`; the hub opens one WebSocket of its
 * own to the router (lazily, shared by every hosted agent, closed when nobody needs it) and wraps
 * each of the agent's frames in `{type: "relay", agent_id, frame}`. The router treats each hosted
 * agent as a connection of its own (py/webmcp_a2a/router/relay.py): identity comes from the
 * agent's own hello, and the router stamps the sender. The hub forwards only frames that come
 * from a channel it hosts, for the one agent id that channel said hello as (first claim wins);
 * frames the router sends back (`relayed`) go to that channel only. `detach` (the agent's own
 * WebSocket works again, or it leaves) sends `unrelay`; the router's `relay_closed` confirms it.
 *
 * Local routing. A direct message between two agents of this page is delivered by the hub, not
 * through the router: the sender's Python hands over its `send` frame, the hub stamps `from_agent`
 * from the sender's channel (a different claim is answered `spoofed_sender`, as the router
 * would), hands the recipient a `deliver` frame, and turns the recipient runtime's ack into the
 * same `result` frame the router would send ({delivered, target_status, message_id, reason}). An
 * id the hub does not host is answered `local-miss` and the sender sends it through the router.
 * Broadcasts and topics always go through the router: it is the one that knows every agent.
 * Ordering between a local and a routed message of the same sender is not guaranteed.
 */

import { Channel } from "./channel.js";

const ACK_TIMEOUT_MS = 10_000;

export class Hub {
  #records = new Map(); // channel -> record {channel, where, agentId, status, attached, detaching}
  #agents = new Map(); // agent id -> record
  #pending = new Map(); // message id -> {sender, ref, target, timer}
  #unrelaying = new Map(); // agent id -> unrelay frames sent whose relay_closed has not come back yet
  #socket = null;
  #socketOpen = false;
  #listeners = new Set();

  constructor({ routerUrl, ackTimeoutMs = ACK_TIMEOUT_MS } = {}) {
    this.routerUrl = routerUrl;
    this.ackTimeoutMs = ackTimeoutMs;
    this.stats = { relayed_out: 0, relayed_in: 0, local_delivered: 0, local_refused: 0, local_missed: 0, rejected: 0 };
  }

  /** Host the agent runtime at the other end of `channel`; `where` is how the page hosts it. */
  host(channel, where) {
    const record = { channel, where, agentId: null, status: null, attached: false, detaching: false };
    this.#records.set(channel, record);
    channel.on("hello", (message) => this.#hello(record, message));
    channel.on("status", ({ status }) => {
      if (record.agentId && status.agent_id === record.agentId) {
        record.status = status;
        this.#changed();
      }
    });
    channel.on("attach", () => this.#attach(record));
    channel.on("frame", ({ frame }) => this.#relay(record, frame));
    channel.on("detach", () => this.#detach(record));
    channel.on("local-send", ({ frame }) => this.#localSend(record, frame));
    channel.on("local-ack", (message) => this.#localAck(record, message));
    channel.on("bye", () => this.#leave(record));
    channel.onClose(() => this.#leave(record));
    return channel;
  }

  /** The page's own main-thread agent: returns the agent's end of an in-page channel. */
  connectLocal() {
    const [agentEnd, hubEnd] = Channel.pair("agent", "hub");
    this.host(hubEnd, "main");
    return agentEnd;
  }

  /** A same-origin iframe's agent (call right after inserting the iframe, before it loads). */
  hostFrame(iframe) {
    return this.host(Channel.toWindow(iframe.contentWindow, `iframe ${iframe.id || iframe.name}`), "iframe");
  }

  /** The hosted agents: id, where they live, their transport and state, whether the hub relays them. */
  table() {
    return [...this.#agents.values()].map(({ agentId, where, status, attached }) => ({
      agent_id: agentId,
      where,
      transport: status?.transport ?? null,
      state: status?.state ?? "starting",
      fallback: Boolean(status?.fallback),
      relayed: attached,
      status,
    }));
  }

  get relayOpen() {
    return this.#socketOpen;
  }

  onChange(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // --- membership -------------------------------------------------------------------------

  #hello(record, { agent_id }) {
    const holder = this.#agents.get(agent_id);
    if ((record.agentId && record.agentId !== agent_id) || (holder && holder !== record)) {
      // A runtime is one agent, and an id belongs to the first runtime that claimed it.
      this.stats.rejected += 1;
      return;
    }
    if (record.attached) {
      // A second hello on one channel is its runtime starting again (an iframe reloaded): the
      // router must let the old relayed registration go before the new one says hello.
      this.#unrelay(agent_id);
      record.attached = false;
      record.detaching = false;
    }
    record.agentId = agent_id;
    this.#records.set(record.channel, record); // again, if it said bye before (an iframe reloading)
    this.#agents.set(agent_id, record);
    this.#announcePeers();
    this.#changed();
  }

  #leave(record) {
    if (!this.#records.delete(record.channel)) return;
    if (record.attached) this.#unrelay(record.agentId);
    record.attached = false;
    if (record.agentId && this.#agents.get(record.agentId) === record) this.#agents.delete(record.agentId);
    for (const [messageId, pending] of this.#pending) {
      if (pending.target === record.agentId) this.#settle(messageId, false, "recipient left the page");
    }
    record.agentId = null; // the window may come back as a new runtime, even as another agent
    this.#announcePeers();
    this.#changed();
  }

  #announcePeers() {
    const ids = [...this.#agents.keys()];
    for (const record of this.#records.values()) record.channel.send("peers", { ids });
  }

  // --- relay --------------------------------------------------------------------------------

  #attach(record) {
    if (!record.agentId) {
      this.stats.rejected += 1;
      return;
    }
    record.attached = true;
    record.detaching = false;
    if (this.#socketOpen) record.channel.send("open");
    else this.#openSocket();
    this.#changed();
  }

  #relay(record, frame) {
    if (!record.agentId || !record.attached || !this.#socketOpen) {
      this.stats.rejected += 1;
      return;
    }
    this.stats.relayed_out += 1;
    this.#sendToRouter({ type: "relay", agent_id: record.agentId, frame });
  }

  #detach(record) {
    if (record.attached && this.#socketOpen) {
      record.detaching = true; // the router's relay_closed confirms, then the agent hears "closed"
      this.#unrelay(record.agentId);
    } else {
      record.attached = false;
      record.channel.send("closed", { code: 1000, reason: "detached" });
    }
  }

  #openSocket() {
    if (this.#socket) return;
    const socket = new WebSocket(this.routerUrl);
    this.#socket = socket;
    socket.addEventListener("open", () => {
      this.#socketOpen = true;
      for (const record of this.#records.values()) if (record.attached) record.channel.send("open");
      this.#changed();
    });
    socket.addEventListener("message", (event) => this.#fromRouter(event.data));
    socket.addEventListener("close", (event) => {
      this.#socket = null;
      this.#socketOpen = false;
      this.#unrelaying.clear();
      for (const record of this.#records.values()) {
        if (!record.attached) continue;
        record.attached = false;
        record.channel.send("closed", {
          code: event.code,
          reason: event.reason || "the page's relay connection closed",
        });
      }
      this.#changed();
    });
  }

  #fromRouter(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    const record = typeof frame?.agent_id === "string" ? this.#agents.get(frame.agent_id) : undefined;
    if (frame?.type === "relayed" && typeof frame.frame === "string") {
      if (!record?.attached) return;
      this.stats.relayed_in += 1;
      record.channel.send("frame", { frame: frame.frame });
    } else if (frame?.type === "relay_closed") {
      // The answer to an unrelay of ours is news only to a runtime that asked to detach: after a
      // runtime restarted, the new one may already be attached again and must not hear it.
      const unrelays = frame.code === 1000 ? (this.#unrelaying.get(frame.agent_id) ?? 0) : 0;
      if (unrelays > 1) this.#unrelaying.set(frame.agent_id, unrelays - 1);
      else if (unrelays === 1) this.#unrelaying.delete(frame.agent_id);
      if (record?.attached && (unrelays === 0 || record.detaching)) {
        record.attached = false;
        record.detaching = false;
        record.channel.send("closed", { code: frame.code, reason: frame.reason });
      }
      // Nobody left to relay for: let the router's connection go.
      if (![...this.#records.values()].some((r) => r.attached)) this.#socket?.close(1000, "nothing to relay");
      this.#changed();
    } else if (frame?.type === "error") {
      console.warn("the router refused a relay frame:", frame.error);
    }
  }

  #unrelay(agentId) {
    if (!this.#socketOpen) return;
    this.#unrelaying.set(agentId, (this.#unrelaying.get(agentId) ?? 0) + 1);
    this.#sendToRouter({ type: "unrelay", agent_id: agentId });
  }

  #sendToRouter(frame) {
    if (this.#socketOpen) this.#socket.send(JSON.stringify(frame));
  }

  // --- local routing --------------------------------------------------------------------------

  #localSend(record, text) {
    let request;
    try {
      request = JSON.parse(text);
    } catch {
      request = null;
    }
    const envelope = request?.envelope;
    if (
      !record.agentId ||
      request?.type !== "send" ||
      !Number.isInteger(request.id) ||
      typeof envelope !== "object" ||
      envelope === null ||
      typeof envelope.message_id !== "string"
    ) {
      this.stats.rejected += 1;
      return;
    }
    const reply = (frame) => record.channel.send("local-result", { frame: JSON.stringify(frame) });
    if (envelope.from_agent != null && envelope.from_agent !== record.agentId) {
      this.stats.rejected += 1;
      return reply({
        type: "error",
        ref: request.id,
        error: {
          code: "spoofed_sender",
          message: `from_agent ${JSON.stringify(envelope.from_agent)} is not this channel's agent ${JSON.stringify(record.agentId)}`,
          field: "envelope.from_agent",
        },
      });
    }
    const target = this.#agents.get(envelope.to_agent);
    if (!target || target === record) {
      this.stats.local_missed += 1;
      return record.channel.send("local-miss", { frame: text });
    }
    const messageId = envelope.message_id;
    if (envelope.expires_at != null && Date.now() / 1000 >= envelope.expires_at) {
      return reply({
        type: "result",
        ref: request.id,
        data: { delivered: false, target_status: "online", message_id: messageId, reason: "expired" },
      });
    }
    // The sender is whoever owns the channel, whatever the frame claims (as the router does).
    envelope.from_agent = record.agentId;
    const previous = this.#pending.get(messageId);
    if (previous) clearTimeout(previous.timer); // a resend: answer the newest request
    this.#pending.set(messageId, {
      sender: record,
      ref: request.id,
      target: target.agentId,
      timer: setTimeout(
        () => this.#settle(messageId, false, `no acknowledgement within ${this.ackTimeoutMs / 1000}s`),
        this.ackTimeoutMs,
      ),
    });
    target.channel.send("local-deliver", {
      frame: JSON.stringify({ type: "deliver", envelope, subscription_id: null }),
    });
  }

  #localAck(record, { message_id: messageId, accepted, reason }) {
    const pending = this.#pending.get(messageId);
    // Only the recipient's runtime can answer for its message.
    if (!pending || pending.target !== record.agentId) return;
    this.#settle(messageId, accepted, reason ?? "refused by recipient");
  }

  #settle(messageId, accepted, reason) {
    const pending = this.#pending.get(messageId);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.#pending.delete(messageId);
    this.stats[accepted ? "local_delivered" : "local_refused"] += 1;
    const online = this.#agents.has(pending.target);
    const data = {
      delivered: accepted,
      target_status: accepted ? "online" : online ? "busy" : "offline",
      message_id: messageId,
      reason: accepted ? null : reason,
    };
    pending.sender.channel.send("local-result", { frame: JSON.stringify({ type: "result", ref: pending.ref, data }) });
    this.#changed();
  }

  #changed() {
    for (const listener of this.#listeners) listener(this);
  }
}
