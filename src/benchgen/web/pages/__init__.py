"""Page routers, one module per area of the web app."""
