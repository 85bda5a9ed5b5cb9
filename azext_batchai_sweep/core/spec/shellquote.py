"""Quoting a value from outside the user's file for the place it lands in a shell command line.

A file name listed from storage is data, never shell syntax. Where it goes into a command line depends on the
quotes the user wrote around the placeholder: `--data {{F}}` (bare), `--data "{{F}}"` (inside double quotes, where
single quotes mean nothing and `$(...)` still runs) or `'{{F}}'`. So the context is read from the text before the
placeholder, with a small lexer of the shell's quoting rules, and the value is escaped for exactly that context.
"""
import shlex

BARE, DOUBLE, SINGLE = 'bare', 'double', 'single'


def quote_context(prefix):
    """The quoting context at the end of `prefix`, a piece of a bash command line: BARE, DOUBLE or SINGLE.

    Command substitutions (`$(...)`, backticks) open a fresh context, also inside double quotes: a placeholder in
    `"$(cat {{F}})"` is bare again, where `;` would end a command.
    """
    stack = [BARE]
    i = 0
    while i < len(prefix):
        char, top = prefix[i], stack[-1]
        if top == SINGLE:
            if char == "'":
                stack.pop()
        elif char == '\\':
            i += 1  # escapes the next character, in bare and double-quoted text alike
        elif top == DOUBLE:
            if char == '"':
                stack.pop()
            elif prefix.startswith('$(', i):
                stack.append('$(')
                i += 1
            elif char == '`':
                stack.append('`')
        else:  # bare, or inside $( ), ( ) or backticks
            if char == "'":
                stack.append(SINGLE)
            elif char == '"':
                stack.append(DOUBLE)
            elif prefix.startswith('$(', i):
                stack.append('$(')
                i += 1
            elif char == '(':
                stack.append('(')
            elif char == ')' and top in ('$(', '('):
                stack.pop()
            elif char == '`':
                if top == '`':
                    stack.pop()
                else:
                    stack.append('`')
        i += 1
    return stack[-1] if stack[-1] in (DOUBLE, SINGLE) else BARE


def quote_for(context, text):
    """`text` as literal data in `context`: one shell word when BARE, and no quote it could close otherwise."""
    if context == DOUBLE:
        # Inside "...", only these four keep a meaning (history expansion `!` is off in a non-interactive shell).
        return ''.join('\\' + c if c in '\\$`"' else c for c in text)
    if context == SINGLE:
        return text.replace("'", "'\\''")  # close, an escaped quote, reopen: nothing else is special inside '...'
    return shlex.quote(text)
