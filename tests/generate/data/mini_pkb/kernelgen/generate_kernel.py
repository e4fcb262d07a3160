# Only the assignment pkbw reads the default system message from (written for pkbw tests).
SYSTEM_PROMPT = """Mini system.
Second line."""
