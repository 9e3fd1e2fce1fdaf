"""ChatOps: a small command language for chat, Slack's request signature and Slack answers.

commands.py parses one line into a command (pure); signature.py checks Slack's v0 signature
(pure); slack.py renders answers as Slack messages (pure); run.py looks names up in the
catalogue and calls the same evaluation /plan, /matrix and /offload use.
"""
