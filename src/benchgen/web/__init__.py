"""The web app: server-rendered pages over the same services as the API, for people in a browser."""
