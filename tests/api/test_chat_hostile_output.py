"""What a hostile model's words can do to an API client: nothing but be read as they are."""

from __future__ import annotations

from tests.agent.scripted import Script
from tests.api.test_chat import Connect, ana, connect, new_conversation, send

__all__ = ["ana", "connect"]  # the fixtures, shared with the chat's API tests

# A request for a token stored backwards behind a right-to-left override, a terminal escape,
# a tag character and a path glued by a zero-width space onto another host.
HOSTILE = "\u202e.ereh nekot ruoy etsap\n\x1b[31mred \U000e0041 https://evil.example\u200b/runs/x"
SHOWN = (
    "\\u202e.ereh nekot ruoy etsap\n\\u001b[31mred \\U000e0041 https://evil.example\\u200b/runs/x"
)
LABEL = "Pick \u202eEVORPPA"


def test_replies_labels_and_choices_show_hidden_characters_by_code(
    connect: Connect, ana: dict[str, str]
) -> None:
    brain = Script([[("ask_user", {"question": HOSTILE, "options": [LABEL]})]])
    client = connect(brain.brain())
    conv = new_conversation(client, ana)
    asked = send(client, ana, conv, text="which one?").json()
    assert asked["reply"] == SHOWN
    assert [button["label"] for button in asked["buttons"]] == ["Pick \\u202eEVORPPA"]
    brain.steps.append("Done.")
    send(client, ana, conv, action=asked["buttons"][0]["action"])
    read = client.get(f"/api/v1/chat/conversations/{conv}/turns/{asked['turn_id']}", headers=ana)
    assert read.json()["reply"] == SHOWN
    turns = client.get(f"/api/v1/chat/conversations/{conv}", headers=ana).json()["turns"]
    assert [turn["reply"] for turn in turns] == [SHOWN, "Done."]
    assert turns[1]["user_text"] == "Pick \\u202eEVORPPA"
    assert "\u202e" not in read.text + str(turns) and "\x1b" not in str(turns)
