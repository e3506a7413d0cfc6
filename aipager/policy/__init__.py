"""The safety policy: one JSON schema, one Python matcher, a compiled twin.

Keep this module free of imports: the pure-Python hook twin imports
``aipager.policy.hookside`` on its hot path.
"""
