"""A job's text made safe for a terminal: what it prints is untrusted, and an escape sequence in it could retitle
the window, move the cursor or overwrite a line (a fake `acc=99` over the real one).

Every control character (C0 but newline, DEL, C1) and every bidirectional override is written as the escape
`-o json` shows (``\\u001b``, ``\\t``...), so table, tsv and stderr show what the job printed, visibly, and nothing
acts on the terminal.
"""
import json
import re

# C0 (tab and carriage return included: a tsv cell or a table row must stay one), DEL, C1, and the Unicode
# bidirectional embeddings, overrides and isolates (a line that reads backwards).
_CONTROLS = re.compile('[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]')


def _escaped(match):
    return json.dumps(match.group(0), ensure_ascii=True)[1:-1]


def escape_controls(text):
    """``text`` with its control characters written as JSON escapes (``None`` stays ``None``)."""
    if text is None:
        return None
    text = str(text)
    return _CONTROLS.sub(_escaped, text) if _CONTROLS.search(text) else text
