"""Human renderings of the core's answers, as pure functions of the answer Structs: text
(markdown and CSV, service.render.text) and pictures (SVG, service.render.svg). The HTTP layer,
the chat bot and the CLI all render through here."""
