/**
 * The mesh view (watch.html): the router's `/watch` stream drawn live. Agents are nodes (shape: where
 * they live; colour: status), topics are hubs joined to their subscribers, and each message flies
 * from its sender to its recipients (through the topic for a topic's event). A timeline lists the
 * newest messages; a correlation id links a request and its response.
 *
 * Fluid under load on purpose: the graph is laid out again only when agents or topics change (at most
 * every 250 ms), messages are drawn on a canvas of their own in animation frames, at most
 * MAX_FLIGHTS at once (more are counted as dropped, never queued), and the timeline keeps the newest
 * TIMELINE_ROWS rows. `?router=` (a router's ws:// URL) and `?token=` (its watch token) as on the
 * test page. For tests: `window.watch` and `<html data-watch>`.
 */

import cytoscape from "/static/vendor/cytoscape/cytoscape.esm.min.mjs";

const MAX_FLIGHTS = 150;
const FLIGHT_MS = 700;
const TIMELINE_ROWS = 100;
const LAYOUT_EVERY_MS = 250;

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const watchUrl =
  params.get("router")?.replace(/\/a2a$/, "/watch") ||
  `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/watch`;

const SHAPES = { main: "ellipse", worker: "round-rectangle", iframe: "rectangle", backend: "hexagon" };
const COLOURS = { online: "#15803d", busy: "#b45309", offline: "#9ca3af" };

const cy = cytoscape({
  container: $("graph"),
  minZoom: 0.2,
  maxZoom: 3,
  style: [
    {
      selector: "node",
      style: {
        label: "data(label)",
        "font-size": 10,
        "text-valign": "bottom",
        "text-margin-y": 3,
        width: 22,
        height: 22,
        "background-color": (node) => COLOURS[node.data("status")] ?? COLOURS.offline,
        shape: (node) => SHAPES[node.data("where")] ?? "diamond",
      },
    },
    { selector: "node.topic", style: { shape: "diamond", "background-color": "#2563eb", width: 16, height: 16 } },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#1d2433" } },
    { selector: "edge", style: { width: 1, "line-color": "#cbd5e1", "curve-style": "straight" } },
  ],
});

const counts = { messages: 0, drawn: 0, dropped: 0 };
const flights = [];
const timeline = [];
let layoutPending = false;

function agentNode(info) {
  const id = `agent:${info.agent_id}`;
  const data = { id, label: info.agent_id, status: info.status, where: info.where ?? "remote", info };
  const node = cy.getElementById(id);
  if (node.nonempty()) node.data(data);
  else {
    cy.add({ group: "nodes", data });
    relayout();
  }
}

function topicHub(topic, subscribers) {
  const id = `topic:${topic}`;
  cy.edges(`[source = "${CSS.escape(id)}"]`).remove();
  if (!subscribers.length) {
    cy.getElementById(id).remove();
    relayout();
    return;
  }
  if (cy.getElementById(id).empty()) {
    cy.add({ group: "nodes", data: { id, label: topic, subscribers }, classes: "topic" });
  }
  cy.getElementById(id).data("subscribers", subscribers);
  for (const agentId of subscribers) {
    if (cy.getElementById(`agent:${agentId}`).empty()) continue;
    cy.add({ group: "edges", data: { id: `${id}->${agentId}`, source: id, target: `agent:${agentId}` } });
  }
  relayout();
}

function relayout() {
  if (layoutPending) return;
  layoutPending = true;
  setTimeout(() => {
    layoutPending = false;
    cy.layout({
      name: "concentric",
      animate: false,
      minNodeSpacing: 18,
      concentric: (node) => (node.hasClass("topic") ? 2 : 1),
      levelWidth: () => 1,
    }).run();
  }, LAYOUT_EVERY_MS);
}

function message(frame) {
  counts.messages++;
  const via = frame.to_agent.startsWith("topic:") ? [frame.to_agent] : [];
  for (const recipient of frame.recipients) fly([`agent:${frame.from_agent}`, ...via, `agent:${recipient}`]);
  timeline.unshift(frame);
  timeline.length = Math.min(timeline.length, TIMELINE_ROWS);
  addRow(frame);
}

function fly(path) {
  if (flights.length >= MAX_FLIGHTS) {
    counts.dropped++;
    return;
  }
  flights.push({ path, start: performance.now() });
  counts.drawn++;
  if (flights.length === 1) requestAnimationFrame(drawFlights);
}

function drawFlights(now) {
  const canvas = $("flights");
  const { width, height } = canvas.getBoundingClientRect();
  if (canvas.width !== width || canvas.height !== height) Object.assign(canvas, { width, height });
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, width, height);
  context.fillStyle = "#2563eb";
  for (let i = flights.length - 1; i >= 0; i--) {
    const { path, start } = flights[i];
    const progress = Math.max(0, (now - start) / FLIGHT_MS); // a frame's time can precede the message's
    const points = path.map((id) => cy.getElementById(id)).filter((node) => node.nonempty());
    if (progress >= 1 || points.length < 2) {
      flights.splice(i, 1);
      continue;
    }
    const leg = Math.min(Math.floor(progress * (points.length - 1)), points.length - 2);
    const within = progress * (points.length - 1) - leg;
    const [from, to] = [points[leg].renderedPosition(), points[leg + 1].renderedPosition()];
    context.beginPath();
    context.arc(from.x + (to.x - from.x) * within, from.y + (to.y - from.y) * within, 4, 0, 2 * Math.PI);
    context.fill();
  }
  showCounts();
  if (flights.length) requestAnimationFrame(drawFlights);
  else context.clearRect(0, 0, width, height);
}

function addRow(frame) {
  const row = document.createElement("tr");
  row.dataset.messageId = frame.message_id;
  row.dataset.correlationId = frame.correlation_id ?? "";
  const time = new Date(frame.at * 1000).toLocaleTimeString([], { hour12: false });
  for (const text of [time, frame.from_agent, frame.to_agent, frame.message_type, frame.correlation_id ?? ""]) {
    const cell = document.createElement("td");
    cell.textContent = text ?? "";
    row.append(cell);
  }
  const body = $("timeline").tBodies[0];
  body.prepend(row);
  while (body.rows.length > TIMELINE_ROWS) body.lastElementChild.remove();
}

function showCounts() {
  const online = cy.nodes().filter((node) => node.data("status") && node.data("status") !== "offline").length;
  $("counts").textContent =
    `${online} online, ${counts.messages} messages (${counts.drawn} drawn, ${counts.dropped} not drawn: too many at once)`;
}

function show(detail) {
  $("details").textContent = JSON.stringify(detail, null, 2);
}

cy.on("tap", "node", (event) => {
  const node = event.target;
  show(
    node.hasClass("topic") ? { topic: node.data("label"), subscribers: node.data("subscribers") } : node.data("info"),
  );
});

$("timeline").addEventListener("click", (event) => {
  const row = event.target.closest("tr[data-message-id]");
  if (!row) return;
  const frame = timeline.find((candidate) => candidate.message_id === row.dataset.messageId);
  if (frame) show(frame);
  for (const other of $("timeline").tBodies[0].rows) {
    other.classList.toggle("chosen", other === row);
    other.classList.toggle(
      "related",
      other !== row && row.dataset.correlationId !== "" && other.dataset.correlationId === row.dataset.correlationId,
    );
  }
});

function watch() {
  const socket = new WebSocket(watchUrl);
  socket.addEventListener("open", () =>
    socket.send(JSON.stringify({ type: "watch", ...(params.get("token") ? { token: params.get("token") } : {}) })),
  );
  socket.addEventListener("message", ({ data }) => {
    const frame = JSON.parse(data);
    if (frame.type === "mesh") {
      cy.elements().remove();
      for (const info of frame.agents) agentNode(info);
      for (const [topic, subscribers] of Object.entries(frame.topics)) topicHub(topic, subscribers);
      document.documentElement.dataset.watch = "ready";
    } else if (frame.type === "agent") agentNode(frame.agent);
    else if (frame.type === "topic") topicHub(frame.topic, frame.subscribers);
    else if (frame.type === "message") message(frame);
    else if (frame.type === "error") {
      $("counts").textContent = `refused: ${frame.error.message}`;
      document.documentElement.dataset.watch = "refused";
    }
    showCounts();
  });
  socket.addEventListener("close", () => {
    if (document.documentElement.dataset.watch === "refused") return;
    $("counts").textContent = "disconnected: trying again";
    setTimeout(watch, 2000);
  });
}

window.watch = { cy, counts, timeline, flights };
watch();
