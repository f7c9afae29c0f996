"""The shared protocol: what validates, what does not, and how a bad field is named."""

import pytest
from pydantic import ValidationError

from webmcp_a2a.protocol import (
    CLIENT_FRAME,
    Deliver,
    Envelope,
    Region,
    Result,
    SendMessageArgs,
    SendRequest,
    SendResult,
    SubscribeArgs,
    deliver_json,
    result_json,
    validation_error_info,
)


def test_envelope_round_trips_through_json():
    envelope = Envelope(
        to_agent="bob",
        message_type="task_request",
        payload={"task": "scan"},
        metadata={"correlation_id": "c-1", "region": {"x": 0, "y": 0, "width": 2, "height": 2}},
    )
    again = Envelope.model_validate_json(envelope.model_dump_json())
    assert again == envelope
    assert again.metadata.region == Region(x=0, y=0, width=2, height=2)


@pytest.mark.parametrize("subscription_id", [None, "sub-1", 'odd "quoted" \\ id \u00e9'])
def test_a_deliver_frames_text_is_the_models_own(subscription_id):
    envelope = Envelope(
        from_agent="alice",
        to_agent="bob",
        message_type="task_request",
        payload={"text": 'line\nbreak "quoted" \U0001f600', "n": [1, 2.5, None, True]},
        metadata={"correlation_id": "c-1", "region": {"x": 0, "y": 0, "width": 2, "height": 2}},
        expires_at=1.5,
        signature="sig",
    )
    model = Deliver(envelope=envelope, subscription_id=subscription_id)
    assert deliver_json(envelope, subscription_id) == model.model_dump_json()


def test_a_result_frames_text_is_the_models_own():
    data = SendResult(delivered=False, target_status="offline", message_id="m-1", reason='not "there"', stored=True)
    model = Result(ref=41, data=data.model_dump(mode="json"))
    assert result_json(41, data) == model.model_dump_json()


def test_envelope_gets_a_fresh_message_id_and_normal_priority():
    first, second = (Envelope(to_agent="bob", message_type="notification") for _ in range(2))
    assert first.message_id != second.message_id
    assert first.priority == 5


@pytest.mark.parametrize(
    ("fields", "bad_field"),
    [
        ({"priority": 11}, "priority"),
        ({"message_type": "gossip"}, "message_type"),
        ({"from_agent": "has space"}, "from_agent"),
        ({"payload": [1, 2]}, "payload"),
        ({"surprise": True}, "surprise"),
        ({"metadata": {"region": {"x": 0, "y": 0, "width": -1, "height": 1}}}, "metadata.region.width"),
    ],
)
def test_bad_envelope_is_rejected_naming_the_field(fields, bad_field):
    with pytest.raises(ValidationError) as caught:
        Envelope.model_validate({"to_agent": "bob", "message_type": "notification", **fields})
    assert validation_error_info(caught.value).field == bad_field


def test_client_frames_are_told_apart_by_type():
    frame = CLIENT_FRAME.validate_json(
        '{"type": "send", "id": 7, "envelope": {"to_agent": "b", "message_type": "data_share"}}'
    )
    assert isinstance(frame, SendRequest)
    assert frame.id == 7


def test_tool_arguments_name_the_bad_field():
    with pytest.raises(ValidationError) as caught:
        SendMessageArgs.model_validate({"target_agent_id": "bob", "message_type": "notification", "payload": "hi"})
    info = validation_error_info(caught.value, "invalid_arguments")
    assert (info.code, info.field) == ("invalid_arguments", "payload")


def test_subscription_filter_region_path_is_named():
    with pytest.raises(ValidationError) as caught:
        SubscribeArgs.model_validate({"event_type": "region_change", "filter": {"region": {"x": 1}}})
    assert validation_error_info(caught.value).field == "filter.region.y"


def test_tool_schema_is_generated_from_the_model():
    schema = SendMessageArgs.model_json_schema()
    assert schema["required"] == ["target_agent_id", "message_type", "payload"]
    assert schema["properties"]["priority"]["maximum"] == 10
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(
    ("other", "overlapping"),
    [
        (Region(x=5, y=5, width=10, height=10), True),
        (Region(x=10, y=0, width=1, height=1), True),  # touching edges count
        (Region(x=11, y=0, width=1, height=1), False),
        (Region(x=0, y=-5, width=1, height=4), False),
    ],
)
def test_region_overlap(other, overlapping):
    assert Region(x=0, y=0, width=10, height=10).overlaps(other) is overlapping
    assert other.overlaps(Region(x=0, y=0, width=10, height=10)) is overlapping
