"""The catalogue: GPUs, interconnects, models and number formats, kept in the database."""
