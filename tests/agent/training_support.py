"""Training test helpers for agent tests: a user with credits, a trainable base model, a
dataset and a train-scoped token, chatting with the offline brain or a scripted one."""

from __future__ import annotations

from typing import Any

from benchgen.agent.brains import Brain
from benchgen.agent.brains.offline.planner import offline_model
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.services import models
from benchgen.services.accounts import credits
from benchgen.services.chat.conversations import TurnView
from benchgen.services.datasets import datasets
from benchgen.services.training import jobs
from tests.agent.scripted import Script, new_conversation, say
from tests.support import OPERATOR, World

SMOL = {"name": "SmolLM2-135M-Instruct (local)", "kind": "local_gguf", "endpoint_model": "smollm2"}
ROWS = b'{"prompt":"a","completion":"b"}\n' * 8
RANDOM = "mdl_builtin_random"


def fixed_gpus(settings: Settings) -> Settings:
    """`settings` with one H200 GPU on offer, whatever torch finds on the test machine."""
    return settings.model_copy(update={"training_gpus": "H200=1"})


class Trainer:
    """A user with credits, a trainable base model, a dataset and a train-scoped token."""

    def __init__(self, world: World, credits_: int = 10_000) -> None:
        self.world = world
        self.user = world.user("tia@example.com", credits_=credits_)
        self.web = Principal.web(self.user)
        self.api = world.api(world.token(self.user, ["read", "runs", "train"]))
        self.smol = world.do(OPERATOR, models.create_platform_model, SMOL).id
        self.support = self.dataset("Support replies")
        self.conv = new_conversation(world.rt, self.api)
        self.offline = Brain("offline", offline_model(world.rt.settings))

    def dataset(self, name: str) -> str:
        upload = datasets.upload_dataset
        return self.world.do(self.web, upload, ROWS, "d.jsonl", {"name": name}).id

    def say(self, text: str, brain: Brain | None = None) -> TurnView:
        return say(self.world.rt, self.api, self.conv, brain or self.offline, text)

    def press(self, turn: TurnView, label_part: str) -> TurnView:
        chosen = [b for b in turn.buttons if label_part in b["label"]]
        assert chosen, [b["label"] for b in turn.buttons]
        return say(self.world.rt, self.api, self.conv, self.offline, action=chosen[0]["action"])

    def propose(self, arguments: dict[str, Any]) -> TurnView:
        script = Script([[("propose_training", arguments)]])
        return self.say("fine-tune it", script.brain())

    def jobs(self) -> list[jobs.TrainingJobView]:
        return self.world.do(self.web, jobs.list_training_jobs)

    def balance(self) -> int:
        return self.world.do(self.web, credits.get_balance)

    def request(self, **hyper: Any) -> dict[str, Any]:
        return {"base_model_id": self.smol, "dataset_id": self.support, "hyperparameters": hyper}
