"""Python agents in pages, driven through WebMCP as an AI agent would, in both WebMCP modes."""

from __future__ import annotations

import uuid

TOOLS = {"a2a_send_message", "a2a_broadcast", "a2a_subscribe", "a2a_inbox"}


def inbox(mesh, page, wait: float = 5, **filters) -> list[dict]:
    result = mesh.call(page, "a2a_inbox", {"wait_seconds": wait, **filters})
    assert not result.get("isError"), result
    return result["structuredContent"]["messages"]


def inbox_until(mesh, page, predicate, wait: float = 5) -> list[dict]:
    """Read the inbox until a message satisfies ``predicate``; return those that do."""
    matching: list[dict] = []
    for _ in range(10):
        matching += [m for m in inbox(mesh, page, wait) if predicate(m)]
        if matching:
            return matching
    return matching


def send(mesh, sender, target_id: str, **fields) -> dict:
    arguments = {"target_agent_id": target_id, "message_type": "notification", "payload": {}, **fields}
    return mesh.call(sender, "a2a_send_message", arguments)


def test_tools_are_registered_with_generated_schemas(mesh, alice):
    if mesh.native:
        tools = {tool["name"]: tool for tool in alice.webmcp.tools()}
    else:
        tools = {tool["name"]: tool for tool in alice.evaluate("navigator.modelContext.listTools()")}
    assert set(tools) >= TOOLS
    schema = tools["a2a_send_message"]["inputSchema"]
    assert schema["required"] == ["target_agent_id", "message_type", "payload"]
    assert schema["properties"]["priority"]["maximum"] == 10


def test_message_reaches_the_other_page_with_its_correlation_id(mesh, alice, bob):
    correlation_id = f"corr-{uuid.uuid4()}"
    result = send(
        mesh, alice, bob.agent_id, message_type="task_request", payload={"task": "count"}, correlation_id=correlation_id
    )
    assert result["structuredContent"]["delivered"] is True
    assert result["structuredContent"]["target_status"] == "online"
    (message,) = inbox(mesh, bob, correlation_id=correlation_id)
    assert message["from_agent"] == alice.agent_id
    assert message["payload"] == {"task": "count"}
    assert message["message_id"] == result["structuredContent"]["message_id"]


def test_received_message_reaches_python_handlers_and_a_dom_event(mesh, alice, bob):
    bob.evaluate("""() => {
        window.domSeen = [];
        window.addEventListener("a2a:message", (event) => window.domSeen.push(event.detail.payload.marker));
        window.a2a.pyodide.runPython(`
import js
python_seen = []
js.window.a2a.agent.on_message(lambda message: python_seen.append(message.payload.get("marker")))
`);
    }""")
    marker = str(uuid.uuid4())
    assert send(mesh, alice, bob.agent_id, payload={"marker": marker})["structuredContent"]["delivered"]
    assert bob.evaluate("window.domSeen") == [marker]
    assert bob.evaluate("window.a2a.pyodide.globals.get('python_seen').toJs()") == [marker]


def test_tool_result_text_alone_is_useful(mesh, alice, bob):
    result = send(mesh, alice, bob.agent_id, payload={"n": 1})
    assert result["content"][0]["text"].startswith("Delivered")


def test_send_to_unknown_agent_is_not_delivered(mesh, alice):
    result = send(mesh, alice, "nobody-is-here")
    assert result["structuredContent"]["delivered"] is False
    assert result["structuredContent"]["target_status"] == "offline"


def test_broadcast_reaches_the_named_type_only(mesh, alice, bob, carol):
    marker = str(uuid.uuid4())
    result = mesh.call(
        alice, "a2a_broadcast", {"agent_type": "monitor", "message_type": "data_share", "payload": {"marker": marker}}
    )
    structured = result["structuredContent"]
    assert bob.agent_id in structured["recipient_ids"]
    assert carol.agent_id not in structured["recipient_ids"]
    # The tool contract: counts are numbers; the ids come under their own name.
    assert structured["recipients"] == structured["delivered_count"] == len(structured["recipient_ids"])
    assert [m["payload"] for m in inbox_until(mesh, bob, lambda m: m["payload"].get("marker") == marker)] == [
        {"marker": marker}
    ]
    assert [m for m in inbox(mesh, carol, wait=0.5) if m["payload"].get("marker") == marker] == []


def test_broadcast_leaves_the_sender_out(mesh, alice, bob):
    result = mesh.call(alice, "a2a_broadcast", {"message_type": "notification", "payload": {}})
    assert alice.agent_id not in result["structuredContent"]["recipient_ids"]
    assert bob.agent_id in result["structuredContent"]["recipient_ids"]


def test_subscribed_event_arrives_when_a_matching_peer_joins(mesh, carol):
    subscribed = mesh.call(
        carol, "a2a_subscribe", {"event_type": "peer_discovered", "filter": {"agent_type": "evolver"}}
    )
    assert subscribed["structuredContent"]["status"] == "active"
    newcomer = mesh.open_agent("dave", "evolver", region="0,0,5,5")
    events = inbox_until(mesh, carol, lambda m: m["payload"].get("agent_id") == newcomer.agent_id)
    assert len(events) == 1
    assert events[0]["subscription_id"] == subscribed["structuredContent"]["subscription_id"]
    assert events[0]["payload"]["region"] == {"x": 0, "y": 0, "width": 5, "height": 5}
    newcomer.close()


def test_invalid_arguments_give_an_error_result_naming_the_field(mesh, alice, bob):
    result = send(mesh, alice, bob.agent_id, priority=42)
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["field"] == "priority"
    assert "priority" in result["content"][0]["text"]


def test_nested_bad_field_is_named_by_its_path(mesh, carol):
    result = mesh.call(carol, "a2a_subscribe", {"event_type": "region_change", "filter": {"region": {"x": 1}}})
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["field"] == "filter.region.y"


def test_navigator_facade_lists_and_calls_the_tools(mesh, alice, bob):
    names = alice.evaluate("navigator.modelContext.listTools().then(tools => tools.map(t => t.name))")
    assert set(names) >= TOOLS
    result = alice.evaluate(
        "(target) => navigator.modelContext.callTool('a2a_send_message', "
        "{target_agent_id: target, message_type: 'notification', payload: {via: 'facade'}})",
        bob.agent_id,
    )
    assert result["structuredContent"]["delivered"] is True


LATE_TOOL_JS = """async ({register, name}) => {
    const tool = {name, description: "registered late", inputSchema: {type: "object", properties: {}},
                  execute: async () => ({content: [{type: "text", text: "late and found"}]})};
    await navigator.modelContext.callTool("a2a_inbox", {wait_seconds: 0});  // the facade has listed the tools
    const registration = new AbortController();
    if (register === "facade") await navigator.modelContext.registerTool(tool);
    else await document.modelContext.registerTool(tool, {signal: registration.signal});
    try {
        return await navigator.modelContext.callTool(name, {});
    } finally {
        navigator.modelContext.unregisterTool(name);
        registration.abort();
    }
}"""


def test_navigator_facade_calls_a_tool_registered_through_it_after_its_last_call(alice):
    result = alice.evaluate(LATE_TOOL_JS, {"register": "facade", "name": "late_facade_tool"})
    assert result["content"][0]["text"] == "late and found"


def test_navigator_facade_calls_a_tool_registered_by_another_script_after_its_last_call(alice):
    result = alice.evaluate(LATE_TOOL_JS, {"register": "document", "name": "late_document_tool"})
    assert result["content"][0]["text"] == "late and found"


def test_navigator_facade_refuses_a_tool_unregistered_after_its_last_call(alice):
    error = alice.evaluate(
        """async () => {
            await navigator.modelContext.registerTool({name: "gone_tool", description: "soon gone",
                inputSchema: {type: "object", properties: {}}, execute: async () => ({content: []})});
            await navigator.modelContext.callTool("gone_tool", {});
            navigator.modelContext.unregisterTool("gone_tool");
            try { await navigator.modelContext.callTool("gone_tool", {}); return null; }
            catch (error) { return error.message; }
        }"""
    )
    assert error is not None
    assert 'No WebMCP tool named "gone_tool"' in error


def test_page_shows_identity_and_connection(alice):
    assert alice.text_content("#agent-id") == alice.agent_id
    assert alice.text_content("#state") == "connected"
    assert "a2a_send_message" in alice.text_content("#tool-list")


def test_page_loaded_everything_from_its_own_server(alice):
    hosts = alice.evaluate("performance.getEntriesByType('resource').map(e => new URL(e.name).hostname)")
    assert hosts
    assert set(hosts) == {"127.0.0.1"}
