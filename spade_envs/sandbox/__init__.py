"""Sandbox: isolated execution of untrusted environment code (DESIGN.md section 5)."""
