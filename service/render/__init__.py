"""Pictures of the core's answers (SVG), as pure functions of the answer Structs."""
