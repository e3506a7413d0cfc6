"""The words of a session's cards and notices, shared by the daemon and every client.

Pure: a session's record (``aipager.port.model``) in, text out.  The daemon renders its
own cards with it, the chat and the page the same lines, so a card reads alike on each.
"""
