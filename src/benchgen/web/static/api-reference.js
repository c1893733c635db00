// The API reference page: Swagger UI over this server's own OpenAPI document.
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  window.SwaggerUIBundle({
    url: document.body.dataset.openapi,
    dom_id: "#swagger-ui",
    deepLinking: true,
  });
});
