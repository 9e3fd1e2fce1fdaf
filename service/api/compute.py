compute_handlers: list = []
