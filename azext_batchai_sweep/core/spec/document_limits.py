"""A sweep file's or job template's own limits, checked before a YAML or JSON parser reads it, and again on what
the parser composed (aliases repeat whole trees without repeating their text).

The order: the file's size (before reading it), its nesting depth from the text alone (yaml_depth; a parser's own
depth limit, which moves between releases, is never reached first), then, on the composed document, the values
its aliases expand to, their depth, and the length of each number (Python refuses to read an integer of more than
4,300 digits with a message about integer conversion). Every refusal says the same thing: the limits, then what
this document broke.
"""
import yaml

from ..errors import SpecError
from .yaml_depth import text_depth

# Limits on a sweep file or job template, checked before anything walks the document: a few kB of YAML aliases
# (the "billion laughs" shape) expand to billions of nodes, and nesting thousands deep exhausts the stack.
MAX_DOCUMENT_BYTES = 1024 * 1024
MAX_DOCUMENT_NODES = 200000  # scalars, lists and maps, every alias counted as the whole tree it repeats
MAX_DOCUMENT_DEPTH = 64


def too_large(what, detail):
    return 'expected a {} of at most {:,} values nested at most {} deep, at most {} MB ({})'.format(
        what, MAX_DOCUMENT_NODES, MAX_DOCUMENT_DEPTH, MAX_DOCUMENT_BYTES // (1024 * 1024), detail)


def check_yaml_node(root, what, path):
    """Refuse a composed YAML document whose expansion is too big or too deep, without expanding it: each distinct
    collection is sized once (an alias is the same node object again), so this costs what the text costs."""
    sizes, depths, open_nodes = {}, {}, set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            _check_scalar(node, what, path)
            sizes[key], depths[key] = 1, 1
            continue
        children = node.value if isinstance(node, yaml.SequenceNode) else [item for pair in node.value
                                                                             for item in pair]
        if not children_done:
            if key in open_nodes:
                raise SpecError(too_large(what, 'an alias refers to itself'), source=path)
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children
                         if not isinstance(child, yaml.ScalarNode) and id(child) not in sizes)
            continue
        open_nodes.discard(key)
        size, depth = 1, 1
        for child in children:
            child_key = id(child)
            if child_key in sizes:
                size += sizes[child_key]
                depth = max(depth, 1 + depths[child_key])
            else:  # a scalar
                _check_scalar(child, what, path)
                size += 1
                depth = max(depth, 2)
        sizes[key], depths[key] = size, depth
        if size > MAX_DOCUMENT_NODES:
            raise SpecError(too_large(what, 'it expands to more than {:,} values{}'.format(
                MAX_DOCUMENT_NODES, ' through its aliases' if _has_alias(root) else '')), source=path)
        if depth > MAX_DOCUMENT_DEPTH:
            raise SpecError(too_large(what, 'it nests more than {} deep'.format(MAX_DOCUMENT_DEPTH)), source=path)


def _has_alias(root):
    """Whether any collection node is reached twice (an alias of it): only to word the error."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            continue
        if id(node) in seen:
            return True
        seen.add(id(node))
        stack.extend(node.value if isinstance(node, yaml.SequenceNode) else [v for pair in node.value for v in pair])
    return False


def check_json_value(document, what, path):
    """The same limits on a parsed JSON document (no aliases there: its size is bounded by the text)."""
    count, stack = 0, [(document, 1)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if depth > MAX_DOCUMENT_DEPTH:
            raise SpecError(too_large(what, 'it nests more than {} deep'.format(MAX_DOCUMENT_DEPTH)), source=path)
        if count > MAX_DOCUMENT_NODES:
            raise SpecError(too_large(what, 'it holds more than {:,} values'.format(MAX_DOCUMENT_NODES)),
                            source=path)
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children)


MAX_NUMBER_LENGTH = 100  # characters of one number: far past any seed or setting, far below int()'s 4,300 digits
_NUMBER_TAGS = ('tag:yaml.org,2002:int', 'tag:yaml.org,2002:float')


def check_text_depth(text, what, path):
    """Refuse a YAML (or JSON) text that nests deeper than the limit, from its text alone."""
    if text_depth(text, limit=MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH:
        raise SpecError(too_large(what, 'it nests more than {} deep'.format(MAX_DOCUMENT_DEPTH)), source=path)


def too_long_number(text, where, what, path):
    return SpecError('expected numbers of at most {} characters in a {}, found one of {:,}{}'.format(
        MAX_NUMBER_LENGTH, what, len(text), ' at ' + where if where else ''), source=path)


def check_number_text(text, what, path, where=None):
    if len(text) > MAX_NUMBER_LENGTH:
        raise too_long_number(text, where, what, path)


def _check_scalar(node, what, path):
    if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_LENGTH:
        mark = node.start_mark
        raise too_long_number(node.value, 'line {}, column {}'.format(mark.line + 1, mark.column + 1), what, path)
