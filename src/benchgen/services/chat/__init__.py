"""The agent's chat: conversations and turns, bound proposals, their kinds and previews."""
