"""OData `$filter` and `$select` as the Batch list operations take them (TEST CODE ONLY: the Batch double's subset).

Filter grammar: comparisons `path op literal` (op: eq ne gt ge lt le; path: a property or `a/b`), `startswith(path,
'text')`, `and`, `or`, `not`, parentheses; literals: 'string', numbers, true/false, datetime'ISO-8601'. An unknown
property or an unsupported construct raises ODataError (Batch answers 400 InvalidQueryParameterValue).
"""
import datetime
import re

_TOKEN = re.compile(r"\s*(?:(datetime'[^']*')|('(?:[^']|'')*')|(-?\d+(?:\.\d+)?)|([A-Za-z_][\w/]*)|([(),]))")


class ODataError(ValueError):
    pass


def parse_time(text):
    """An ISO-8601 UTC time as Batch writes it (fraction optional, 'Z' or no zone)."""
    text = text.strip().rstrip('Z').replace('+00:00', '')
    main, _, fraction = text.partition('.')
    moment = datetime.datetime.strptime(main, '%Y-%m-%dT%H:%M:%S')
    micro = int((fraction + '000000')[:6]) if fraction else 0
    return moment.replace(microsecond=micro, tzinfo=datetime.timezone.utc)


def _lookup(item, path):
    value = item
    for part in path.split('/'):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class _Filter:
    def __init__(self, text, allowed):
        self.tokens = []
        position = 0
        while position < len(text):
            if not text[position:].strip():
                break
            match = _TOKEN.match(text, position)
            if not match:
                raise ODataError('cannot parse $filter at {!r}'.format(text[position:position + 30]))
            position = match.end()
            self.tokens.append(match)
        self.pos = 0
        self.allowed = allowed

    def _peek_word(self):
        if self.pos < len(self.tokens) and self.tokens[self.pos].group(4):
            return self.tokens[self.pos].group(4)
        return None

    def _take(self, punct=None):
        if self.pos >= len(self.tokens):
            raise ODataError('$filter ends too early')
        token = self.tokens[self.pos]
        if punct is not None and token.group(5) != punct:
            raise ODataError('expected {!r} in $filter'.format(punct))
        self.pos += 1
        return token

    def parse(self):
        predicate = self._or()
        if self.pos != len(self.tokens):
            raise ODataError('unexpected {!r} in $filter'.format(self.tokens[self.pos].group(0).strip()))
        return predicate

    def _or(self):
        return self._joined('or', self._and, lambda a, b: lambda item: a(item) or b(item))

    def _and(self):
        return self._joined('and', self._not, lambda a, b: lambda item: a(item) and b(item))

    def _joined(self, word, operand, combine):
        left = operand()
        while self._peek_word() == word:
            self.pos += 1
            left = combine(left, operand())
        return left

    def _not(self):
        if self._peek_word() == 'not':
            self.pos += 1
            inner = self._not()
            return lambda item: not inner(item)
        return self._atom()

    def _path(self, word):
        if word not in self.allowed:
            raise ODataError('$filter on {!r} is not supported (supported: {})'.format(
                word, ', '.join(sorted(self.allowed))))
        return word

    def _literal(self):
        token = self._take()
        if token.group(1):
            return parse_time(token.group(1)[len("datetime'"):-1])
        if token.group(2):
            return token.group(2)[1:-1].replace("''", "'")
        if token.group(3):
            return float(token.group(3))
        if token.group(4) in ('true', 'false'):
            return token.group(4) == 'true'
        raise ODataError('expected a literal in $filter, found {!r}'.format(token.group(0).strip()))

    def _atom(self):
        token = self._take()
        if token.group(5) == '(':
            inner = self._or()
            self._take(')')
            return inner
        word = token.group(4)
        if word == 'startswith':
            self._take('(')
            path = self._path(self._take().group(4) or '')
            self._take(',')
            prefix = self._literal()
            self._take(')')
            return lambda item: str(_lookup(item, path) or '').startswith(prefix)
        if not word:
            raise ODataError('unexpected {!r} in $filter'.format(token.group(0).strip()))
        path = self._path(word)
        op = self._peek_word()
        if op not in ('eq', 'ne', 'gt', 'ge', 'lt', 'le'):
            raise ODataError('expected a comparison after {!r} in $filter'.format(path))
        self.pos += 1
        literal = self._literal()

        def compare(item):
            value = _lookup(item, path)
            if isinstance(literal, datetime.datetime):
                value = parse_time(value) if value else None
            elif isinstance(literal, float) and value is not None:
                value = float(value)
            if value is None:
                return op == 'ne'
            return {'eq': value == literal, 'ne': value != literal, 'gt': value > literal, 'ge': value >= literal,
                    'lt': value < literal, 'le': value <= literal}[op]
        return compare


def compile_filter(text, allowed):
    """A predicate over an item (REST JSON dict) for `text`; `allowed`: the property paths the list supports."""
    if not text:
        return lambda item: True
    return _Filter(text, allowed).parse()


def select(item, text):
    """`item` with only the properties `$select` names (top-level names; `a/b` keeps `a`)."""
    if not text:
        return item
    names = {part.strip().split('/')[0] for part in text.split(',') if part.strip()}
    return {k: v for k, v in item.items() if k in names}
