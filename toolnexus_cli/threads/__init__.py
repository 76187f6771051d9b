"""Threads: `toolnexus threads ...`, which hold a turn, exports, what a continued one shows."""
