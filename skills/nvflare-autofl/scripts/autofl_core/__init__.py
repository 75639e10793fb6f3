"""Private modules of the nvflare-autofl skill, loaded by file path from the sibling scripts.

Keep this file empty of imports: lifecycle actions must stay cheap (no matplotlib, no nvflare).
"""
