"""How deep a YAML text nests, bounded from the text alone, before any YAML parser reads it.

YAML parsers have nesting limits of their own that move between releases (libyaml, inside PyYAML 6.0.4, refuses
a document past its own depth with its own words), and a recursive composer or constructor exhausts the stack
on thousands of levels. The sweep file's limit is therefore checked on the text first, so that the user gets the
project's message whatever parser and version az brings.

`text_depth` is an upper bound of the depth the composed document has without its aliases (a scalar is 1 deep, a
collection one more than its deepest item; aliases add depth only after composition, where
document_limits.check_yaml_node counts them), and for documents as people write them it is that depth exactly:
every open block collection (an indentation column, or a sequence written at its mapping key's column), every
compact `- ` or `? ` indicator, every open flow bracket and the node at the leaf count one level. Quoted scalars,
block scalars (`|`, `>`) and comments are read past, so brackets inside them count nothing. Where the text is not
valid YAML the number is still finite and the parser says what is wrong afterwards.
"""
import re

# In flow context, the end of a plain scalar: an indicator, `: ` (or `:` before one), or a comment.
_FLOW_PLAIN_END = re.compile(r'[\[\]{},]|:(?=[\s\[\]{},]|$)|(?<=\s)#')
_BLOCK_SCALAR = re.compile(r'[|>][-+0-9]*(?:\s+#.*)?\s*$')
_PROPERTY = re.compile(r'(?:[&!][^\s\[\]{},]*\s+)+')  # anchors and tags before a node
# What ends a block mapping key written as a plain scalar (`:` then a space or the line's end), or a comment first.
_KEY_OR_COMMENT = re.compile(r':(?:[ \t]|$)|[ \t]#')


class _Scan:
    """The scanner's state across lines: open block collections, flow depth, and what continues on the next line."""

    def __init__(self):
        self.block = []  # open block collections, innermost last: [column, is_sequence]
        self.flow = []  # open flow collections, innermost last: '[', '{', or ':' (a `[k: v]` pair's own mapping)
        self.quote = None  # the quote character of a scalar still open at the end of a line
        self.block_scalar_parent = None  # column a block scalar's lines must be indented beyond
        self.deepest = 0

    def node(self, offset=0):
        """A node begins here: it sits inside every open collection (`offset` -1: it is the innermost one)."""
        depth = len(self.block) + len(self.flow) + 1 + offset
        if depth > self.deepest:
            self.deepest = depth


def text_depth(text, limit=None):
    """An upper bound of the nesting depth of the YAML document(s) in `text` (see the module's note).

    With `limit`, stops reading as soon as the bound passes it (what is read so far proves the document too deep).
    """
    scan = _Scan()
    for line in text.splitlines():
        _scan_line(scan, line)
        if limit is not None and scan.deepest > limit:
            break
    return scan.deepest


def _scan_line(scan, line):
    stripped = line.lstrip(' ')
    column = len(line) - len(stripped)
    if scan.block_scalar_parent is not None:
        if not stripped.strip() or column > scan.block_scalar_parent:
            return  # a line of the block scalar's text
        scan.block_scalar_parent = None
    if scan.quote:
        position = _end_of_quoted(scan, line, 0)
        if position is not None and scan.flow:  # the scalar was inside brackets, which go on after it
            _scan_flow(scan, line, position)
        return
    if scan.flow:
        _scan_flow(scan, line, 0)
        return
    if not stripped or stripped.startswith('#'):
        return
    if column == 0 and (stripped.startswith(('---', '...')) and stripped[3:4] in ('', ' ', '\t')):
        scan.block = []  # a new document
        rest = stripped[3:].lstrip()
        if rest and not rest.startswith('#'):
            _block_node(scan, line, len(line) - len(rest))
        return
    if column == 0 and stripped.startswith('%'):
        return  # a directive
    _enter_block_line(scan, column, stripped)
    _block_node(scan, line, column)


def _enter_block_line(scan, column, stripped):
    """Close the block collections that this line's indentation ends."""
    while scan.block and scan.block[-1][0] > column:
        scan.block.pop()
    # A sequence written at its mapping key's column ends at the next key of that mapping.
    is_entry = stripped.startswith('-') and stripped[1:2] in ('', ' ')
    if not is_entry and len(scan.block) > 1 and scan.block[-1] == [column, True] and scan.block[-2][0] == column:
        scan.block.pop()


def _open(scan, column, is_sequence):
    """A block collection's entry starts at `column`: the one open there, or a new one (counted)."""
    if scan.block and scan.block[-1] == [column, is_sequence]:
        return
    scan.block.append([column, is_sequence])
    scan.node(-1)


def _block_node(scan, line, position):
    """Read the node(s) from `position` on a line in block context."""
    while True:
        position = _skip_spaces(line, position)
        rest = line[position:]
        if not rest or rest.startswith('#'):
            scan.node()  # after an indicator: its node is empty (null) or on the next lines
            return
        if rest[0] in '-?:' and rest[1:2] in ('', ' '):
            # An entry of a block sequence (`- `), or an explicit key or value of a mapping (`? `, `: `); written
            # after another indicator (`- - x`), it opens a nested collection at its own column.
            _open(scan, position, rest[0] == '-')
            position += 1
            continue
        match = _PROPERTY.match(rest)
        if match:
            position += match.end()
            continue
        break
    key_end = _block_key_end(line, position)
    if key_end is not None:
        _open(scan, position, False)
        scan.node()  # the key
        _value(scan, line, key_end)
        return
    _value(scan, line, position)


def _block_key_end(line, position):
    """Where the value of a block mapping entry starts when a key starts at `position`, else None."""
    rest = line[position:]
    if rest[:1] in ('"', "'"):
        end = _quoted_end(rest, 1, rest[0])
        if end is None:
            return None
        after = rest[end:].lstrip(' ')
        if after.startswith(':') and after[1:2] in ('', ' ', '\t'):
            return len(line) - len(after) + 1
        return None
    if rest[:1] in '[{|>' or not rest:
        return None
    match = _KEY_OR_COMMENT.search(rest)
    if match is None or match.group().endswith('#') or match.start() == 0:
        return None
    return position + match.end()


def _value(scan, line, position):
    """A node in block context (a key's value, or the content after indicators)."""
    position = _skip_spaces(line, position)
    match = _PROPERTY.match(line, position)
    if match:
        position = _skip_spaces(line, match.end())
    rest = line[position:]
    if not rest or rest.startswith('#'):
        return  # the value is on the next lines (or empty)
    if _BLOCK_SCALAR.match(rest):
        scan.node()
        scan.block_scalar_parent = scan.block[-1][0] if scan.block else -1
        return
    if rest[0] in '"\'':
        scan.node()
        scan.quote = rest[0]
        _end_of_quoted(scan, line, position + 1)  # in block context: what follows it is a comment or nothing
        return
    if rest[0] in '[{':
        _scan_flow(scan, line, position)
        return
    scan.node()  # a plain scalar: the rest of the line (up to a comment) is its text


def _scan_flow(scan, line, position):
    """Read flow context (`[...]`, `{...}`) from `position`; it may continue on the next lines."""
    expect_node = True
    length = len(line)
    while position < length:
        char = line[position]
        if char in ' \t':
            position += 1
            continue
        if char == '#' and (position == 0 or line[position - 1] in ' \t'):
            return
        if char in '[{':
            scan.node()
            scan.flow.append(char)
            expect_node = True
            position += 1
        elif char in ']},':
            if scan.flow and scan.flow[-1] == ':':
                scan.flow.pop()  # the end of a `[k: v]` pair
            if char != ',':
                if scan.flow:
                    scan.flow.pop()
                if not scan.flow:
                    return  # back in block context: what follows on this line is a comment or nothing
            expect_node = char == ','
            position += 1
        elif char == '?':
            expect_node = True
            position += 1
        elif char == ':':
            if scan.flow and scan.flow[-1] == '[':
                # `[k: v]`: a one-pair mapping inside the sequence, one level deeper (its key counted there too)
                scan.flow.append(':')
                scan.node()
            expect_node = True
            position += 1
        elif char in '"\'' and expect_node:
            scan.node()
            scan.quote = char
            position = _end_of_quoted(scan, line, position + 1)
            if position is None:
                return
            expect_node = False
        elif char in '&!' and expect_node:
            match = _PROPERTY.match(line, position)
            position = match.end() if match else length
        else:
            if expect_node:
                scan.node()
            expect_node = False
            stop = _FLOW_PLAIN_END.search(line, position + 1)
            position = stop.start() if stop else length


def _end_of_quoted(scan, line, position):
    """Past the closing quote of the scalar open in `scan.quote`, or None when it goes on to the next line."""
    end = _quoted_end(line, position, scan.quote)
    if end is not None:
        scan.quote = None
    return end


def _quoted_end(text, position, quote):
    """The index after the closing `quote` from `position` ('' and \\" escapes), or None if the line has none."""
    while True:
        found = text.find(quote, position)
        if found < 0:
            return None
        if quote == "'":
            if text[found + 1:found + 2] == "'":
                position = found + 2
                continue
            return found + 1
        backslashes = 0
        while found - backslashes - 1 >= position and text[found - backslashes - 1] == '\\':
            backslashes += 1
        if backslashes % 2 == 0:
            return found + 1
        position = found + 1


def _skip_spaces(line, position):
    while position < len(line) and line[position] in ' \t':
        position += 1
    return position
