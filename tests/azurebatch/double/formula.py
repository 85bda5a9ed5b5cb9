"""Batch's autoscale formula language, the subset a pool formula uses (TEST CODE ONLY: the Batch double's evaluator).

Written from Batch's documentation of the language, independently of the scheduler's formula writer
(azurebatch/pools.py), so that the double checks the formula's meaning rather than its spelling:

- statements `$name = expression;` (newlines are whitespace; `//` comments to the end of the line);
- expressions: `c ? a : b`, `||`, `&&`, `== != < <= > >=`, `+ - * /`, unary `-` and `!`, parentheses, numbers,
  `max(...)`/`min(...)`/`avg(...)`/`sum(...)`/`count(...)` over numbers and sample vectors, `TimeInterval_*`
  constants (a time interval, so that `GetSample(TimeInterval_Minute * 5)` is a window and `GetSample(1)` a count);
- service variables: sampled metrics (`$PendingTasks`, `$ActiveTasks`, `$RunningTasks`) with `GetSample(n)` (the
  last n samples) / `GetSample(window)` (the samples of the window) / `GetSamplePercent(window)` (the percentage
  of the window's expected samples that exist; Batch samples every 30 s), and the pool's current values
  (`$CurrentDedicatedNodes`, `$CurrentLowPriorityNodes`, `$TargetDedicatedNodes`, `$TargetLowPriorityNodes`);
- `$NodeDeallocationOption` takes the names `requeue`, `terminate`, `taskcompletion`, `retaineddata`.

`evaluate(formula, metrics)` returns the variables after the run; FormulaError carries Batch's error shape.
"""
import re

SAMPLE_SECONDS = 30  # Batch takes a metric sample every 30 seconds
DEALLOCATION_OPTIONS = ('requeue', 'terminate', 'taskcompletion', 'retaineddata')
INTERVALS = {'TimeInterval_Second': 1, 'TimeInterval_Minute': 60, 'TimeInterval_Hour': 3600,
             'TimeInterval_Day': 86400, 'TimeInterval_Week': 604800, 'TimeInterval_Zero': 0}
SAMPLED = ('$PendingTasks', '$ActiveTasks', '$RunningTasks')
_TOKEN = re.compile(r'\s*(?:(//[^\n]*)|(\d+(?:\.\d+)?)|(\$?[A-Za-z_]\w*)|(==|!=|<=|>=|&&|\|\||[-+*/()?:;,.<>!=]))')


class FormulaError(Exception):
    """A formula Batch would not run: `code` and `message` as Batch's AutoScaleRun error has them."""

    def __init__(self, message, code='InvalidAutoScaleFormula'):
        super().__init__(message)
        self.code = code
        self.message = message


class Interval(float):
    """A time interval in seconds (distinct from a plain number: GetSample takes either)."""


class Samples:
    """A sampled metric: `values` oldest first, one per SAMPLE_SECONDS, the last one the most recent."""

    def __init__(self, values):
        self.values = list(values)

    def call(self, method, args):
        if len(args) != 1:
            raise FormulaError('{} takes one argument'.format(method))
        arg = args[0]
        if method == 'GetSample':
            if isinstance(arg, Interval):
                wanted = int(arg // SAMPLE_SECONDS)
                return [float(v) for v in self.values[-wanted:]] if wanted else []
            return [float(v) for v in self.values[-int(arg):]]
        if method == 'GetSamplePercent':
            expected = max(1, int(arg // SAMPLE_SECONDS))
            return 100.0 * min(expected, len(self.values)) / expected
        raise FormulaError('unknown method {}'.format(method))


def _flatten(args):
    out = []
    for arg in args:
        if isinstance(arg, list):
            out.extend(arg)
        elif isinstance(arg, (int, float)):
            out.append(float(arg))
        else:
            raise FormulaError('not a number: {!r}'.format(arg))
    return out


def _scalar(value):
    if isinstance(value, list):
        if len(value) != 1:
            raise FormulaError('a sample vector of {} values used as a number'.format(len(value)))
        return value[0]
    if isinstance(value, (int, float)):
        return value
    raise FormulaError('not a number: {!r}'.format(value))


def _aggregate(name, values):
    if not values:
        raise FormulaError('{}() of no values'.format(name), code='AutoScaleFormulaEvaluationError')
    return {'max': max, 'min': min, 'sum': sum, 'count': len,
            'avg': lambda v: sum(v) / len(v)}[name](values)


class _Parser:
    def __init__(self, text, variables):
        self.tokens = []
        position = 0
        text = text.strip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                raise FormulaError('unexpected text at {}: {!r}'.format(position, text[position:position + 20]))
            position = match.end()
            if match.group(1) is None and match.group(0).strip():
                self.tokens.append(match.group(0).strip())
        self.pos = 0
        self.vars = variables
        self.assigned = []
        self.skipping = 0  # > 0 while parsing the branch a condition did not take (Batch does not evaluate it)

    def run(self, function, *args):
        return 0.0 if self.skipping else function(*args)

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected=None):
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise FormulaError('expected {!r}, found {!r}'.format(expected or 'a token', token))
        self.pos += 1
        return token

    def program(self):
        while self.peek() is not None:
            name = self.take()
            if not name.startswith('$'):
                raise FormulaError('a statement assigns a $variable, found {!r}'.format(name))
            self.take('=')
            self.vars[name] = self.expression()
            self.assigned.append(name)
            if self.peek() is not None:
                self.take(';')
        return self.vars

    def expression(self):
        condition = self.binary(0)
        if self.peek() == '?':
            self.take('?')
            taken = bool(self.run(_scalar, condition))
            yes = self.branch(taken)
            self.take(':')
            no = self.branch(not taken)
            return yes if taken else no
        return condition

    def branch(self, taken):
        if not taken:
            self.skipping += 1
        try:
            return self.expression()
        finally:
            if not taken:
                self.skipping -= 1

    _LEVELS = (('||',), ('&&',), ('==', '!=', '<', '<=', '>', '>='), ('+', '-'), ('*', '/'))

    def binary(self, level):
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = self.run(_apply, op, left, right)
        return left

    def unary(self):
        if self.peek() == '-':
            self.take()
            value = self.unary()
            return Interval(-value) if isinstance(value, Interval) else -self.run(_scalar, value)
        if self.peek() == '!':
            self.take()
            return 0.0 if self.run(_scalar, self.unary()) else 1.0
        return self.primary()

    def arguments(self):
        self.take('(')
        args = []
        while self.peek() != ')':
            args.append(self.expression())
            if self.peek() == ',':
                self.take(',')
        self.take(')')
        return args

    def primary(self):
        token = self.take()
        if token == '(':
            value = self.expression()
            self.take(')')
            return value
        if re.fullmatch(r'\d+(?:\.\d+)?', token):
            return float(token)
        if token in INTERVALS:
            return Interval(INTERVALS[token])
        if token in DEALLOCATION_OPTIONS:
            return token
        if token in ('max', 'min', 'avg', 'sum', 'count'):
            args = self.arguments()
            return self.run(lambda: _aggregate(token, _flatten(args)))
        if token.startswith('$'):
            if token not in self.vars and not self.skipping:
                raise FormulaError('{} is not defined'.format(token), code='AutoScaleFormulaEvaluationError')
            value = self.vars.get(token, 0.0)
            if self.peek() == '.':
                self.take('.')
                method = self.take()
                args = self.arguments()
                if not isinstance(value, Samples):
                    return self.run(_raise, FormulaError('{} has no method {}'.format(token, method)))
                return self.run(value.call, method, args)
            return value
        raise FormulaError('unknown name {!r}'.format(token))


def _raise(error):
    raise error


def _apply(op, left, right):
    a, b = _scalar(left), _scalar(right)
    if op in ('*', '/', '+', '-'):
        if op == '/' and b == 0:
            raise FormulaError('division by zero', code='AutoScaleFormulaEvaluationError')
        value = {'*': a * b, '/': a / b if b else 0, '+': a + b, '-': a - b}[op]
        return Interval(value) if isinstance(left, Interval) or isinstance(right, Interval) else value
    return float({'||': bool(a) or bool(b), '&&': bool(a) and bool(b), '==': a == b, '!=': a != b, '<': a < b,
                  '<=': a <= b, '>': a > b, '>=': a >= b}[op])


def evaluate(formula, metrics):
    """Run `formula`; `metrics`: {'$PendingTasks': [samples...], ..., '$CurrentDedicatedNodes': n, ...}.
    Returns {'targetDedicated', 'targetLowPriority', 'deallocation', 'variables'} (targets as Batch rounds them:
    truncated, never negative)."""
    variables = {name: (Samples(value) if name in SAMPLED else float(value)) for name, value in metrics.items()}
    variables.setdefault('$NodeDeallocationOption', 'requeue')
    parser = _Parser(formula, variables)
    result = parser.program()
    targets = {}
    for name in ('$TargetDedicatedNodes', '$TargetLowPriorityNodes'):
        value = _scalar(result.get(name, 0))
        targets[name] = max(0, int(value))
    option = result['$NodeDeallocationOption']
    if option not in DEALLOCATION_OPTIONS:
        raise FormulaError('$NodeDeallocationOption must be one of {}'.format(', '.join(DEALLOCATION_OPTIONS)))
    shown = {k: result[k] for k in ['$TargetDedicatedNodes', '$TargetLowPriorityNodes', '$NodeDeallocationOption']
             + parser.assigned if k in result}
    return {'targetDedicated': targets['$TargetDedicatedNodes'],
            'targetLowPriority': targets['$TargetLowPriorityNodes'], 'deallocation': option, 'variables': shown}


def results_text(variables):
    """AutoScaleRun.results as Batch writes it: `$name=value` pairs separated by `;`."""
    def text(value):
        if isinstance(value, list):
            return '[{}]'.format(','.join(text(v) for v in value))
        if isinstance(value, float):
            return str(int(value)) if value == int(value) else repr(value)
        return str(value)
    return ';'.join('{}={}'.format(name, text(value)) for name, value in variables.items())
